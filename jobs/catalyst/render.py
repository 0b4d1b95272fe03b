# script-version: 2
# Renders PNG images while nendo runs: the particles coloured by speed (from 0 to the largest
# speed of the step) over each rank's blocks, drawn as one translucent hull coloured by the rank
# that owns them. Writes images/view_NNNNNN.png (NNNNNN = step) in the output directory at every
# co-processing call (scene key catalyst.every_steps sets how often).
#   mpirun -np 2 nendo run SCENE --catalyst jobs/catalyst/render.py
# On a machine without a display, run it under a virtual one: xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" mpirun -np 2 nendo ...
# The camera follows the material (three-quarter view in 3D, front view in 2D) unless set by
# these optional environment variables (jobs/catalyst/gallery.sh uses them):
# - RENDER_FRAME="xmin xmax ymin ymax zmin zmax" (metres; 2D: z 0 0): the camera stays on that box
#   (2D: a parallel projection), zoomed by RENDER_ZOOM (default 1), so that motion shows;
# - RENDER_SHAPES="box x0 x1 y0 y1 z0 z1; cylinder cx cy cz radius height; ..." drawn in grey
#   (the colliders; cylinders along y; in 2D z0, z1 and cz are ignored);
# - RENDER_POINT_SIZE: the particles' size in pixels (default 3).
# Ranges and bounds are reduced over all ranks: Catalyst's data information is the rank's own
# piece, and every rank must take the same decisions (the render is collective).
import os

from paraview.simple import *
from paraview import catalyst
from paraview.modules.vtkRemotingCore import vtkProcessModule
from paraview.vtk.vtkParallelCore import vtkCommunicator
from paraview.vtk.util.numpy_support import vtk_to_numpy, numpy_to_vtk
import numpy as np

particles = TrivialProducer(registrationName="particles")
blocks = TrivialProducer(registrationName="blocks")

view = CreateView("RenderView")
view.ViewSize = [1280, 800]
# As in render.py: one image delivery mode on every rank, also on ranks that own no particles.
view.RemoteRenderThreshold = 0.0
view.OrientationAxesVisibility = 1
view.Background = [1.0, 1.0, 1.0]
view.UseColorPaletteForBackground = 0

# The blocks' corners merged: the surface is then each rank's hull instead of every face of
# every block (6 faces per block, which in 3D stack up in front of the particles).
block_hull = CleantoGrid(registrationName="block_hull", Input=blocks)
block_display = Show(block_hull, view)
block_display.Representation = "Surface With Edges"
block_display.Opacity = 0.15
ColorBy(block_display, ("CELLS", "rank"))
rank_lut = GetColorTransferFunction("rank")
# What render.py gets: its "Set1" is a categorical preset, which leaves a non-categorical map at
# ParaView's default, Cool to Warm (rank 0 blue, the last rank red, those between greyish).
rank_lut.ApplyPreset("Cool to Warm", True)

particle_display = Show(particles, view)
particle_display.Representation = "Points"
particle_display.PointSize = float(os.environ.get("RENDER_POINT_SIZE", "3"))
particle_display.RenderPointsAsSpheres = 1
ColorBy(particle_display, ("POINTS", "velocity", "Magnitude"))
speed_lut = GetColorTransferFunction("velocity")
speed_lut.ApplyPreset("Turbo", True)
speed_bar = GetScalarBar(speed_lut, view)
speed_bar.Title = "speed"
speed_bar.ComponentTitle = "(m/s)"
speed_bar.TitleColor = speed_bar.LabelColor = [0.1, 0.1, 0.1]
particle_display.SetScalarBarVisibility(view, True)

FRAME = [float(v) for v in os.environ.get("RENDER_FRAME", "").split()]
ZOOM = float(os.environ.get("RENDER_ZOOM", "1"))
for shape in filter(None, (s.split() for s in os.environ.get("RENDER_SHAPES", "").split(";"))):
    kind, numbers = shape[0], [float(v) for v in shape[1:]]
    if kind == "box":
        x0, x1, y0, y1, z0, z1 = numbers
        if FRAME and FRAME[5] == FRAME[4]:
            z0, z1 = -0.01, -0.005  # 2D: behind the particles (z = 0)
        source = Box(XLength=x1 - x0, YLength=y1 - y0, ZLength=z1 - z0,
                     Center=[(x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2])
    elif kind == "cylinder":
        cx, cy, cz, radius, height = numbers
        source = Cylinder(Radius=radius, Height=height, Center=[cx, cy, cz], Resolution=48)
    else:
        raise ValueError("RENDER_SHAPES: unknown shape " + kind)
    shape_display = Show(source, view)
    shape_display.AmbientColor = shape_display.DiffuseColor = [0.7, 0.7, 0.7]

images = CreateExtractor("PNG", view, registrationName="images")
images.Writer.FileName = "view_{timestep:06d}.png"
images.Writer.ImageResolution = [1280, 800]
images.Trigger = "TimeStep"
images.Trigger.Frequency = 1

options = catalyst.Options()
options.ExtractsOutputDirectory = "images"
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1


def _allreduce(values, operation):
    controller = vtkProcessModule.GetProcessModule().GetGlobalController()
    send = numpy_to_vtk(np.ascontiguousarray(values, dtype=np.float64), deep=1)
    receive = send.NewInstance()
    controller.AllReduce(send, receive, operation)
    return vtk_to_numpy(receive).copy()


def _global_bounds_and_speed():
    # [xmin, ymin, zmin, speed min] and [xmax, ymax, zmax, speed max] over all ranks; a rank
    # without particles contributes nothing.
    particles.UpdatePipeline()
    piece = particles.GetClientSideObject().GetOutputDataObject(0)
    low, high = np.full(4, np.inf), np.full(4, -np.inf)
    if piece.GetNumberOfPoints() > 0:
        x = vtk_to_numpy(piece.GetPoints().GetData())
        v = vtk_to_numpy(piece.GetPointData().GetArray("velocity"))
        speed = np.sqrt((v * v).sum(axis=1))
        low = np.concatenate([x.min(axis=0), [speed.min()]])
        high = np.concatenate([x.max(axis=0), [speed.max()]])
    return _allreduce(low, vtkCommunicator.MIN_OP), _allreduce(high, vtkCommunicator.MAX_OP)


_framed = False


def _frame(low, high):
    # render.py's camera: a three-quarter view of 3D scenes (front view of 2D ones), framing the
    # material anew at every call; or a fixed camera on RENDER_FRAME.
    global _framed
    if FRAME and _framed:
        return
    if not FRAME:
        if not _framed:
            view.CameraFocalPoint = [0, 0, 0]
            view.CameraViewUp = [0, 1, 0]
            view.CameraPosition = [0.6, 0.5, 1.0] if high[2] > low[2] else [0, 0, 1]
        view.ResetCamera(False)
    elif FRAME[5] > FRAME[4]:
        view.CameraFocalPoint = [0, 0, 0]
        view.CameraViewUp = [0, 1, 0]
        view.CameraPosition = [0.6, 0.5, 1.0]
        view.SMProxy.ResetCamera(*FRAME)
        view.GetActiveCamera().Dolly(ZOOM)
    else:  # 2D: the box fills the picture, leaving room for the scalar bar on the right
        width, height = FRAME[1] - FRAME[0], FRAME[3] - FRAME[2]
        centre = [(FRAME[0] + FRAME[1]) / 2 + 0.06 * width, (FRAME[2] + FRAME[3]) / 2, 0]
        view.CameraParallelProjection = 1
        view.CameraFocalPoint = centre
        view.CameraViewUp = [0, 1, 0]
        view.CameraPosition = [centre[0], centre[1], 1]
        view.CameraParallelScale = max(height / 2, 1.12 * width / 2 * 800 / 1280) / ZOOM
    _framed = True


def catalyst_execute(info):
    # The colours from 0 to the largest speed of this step over all ranks (render.py: from the
    # least, which exaggerates the differences of a body in free fall), then the camera.
    GetTimeKeeper().Time = info.time  # else the views ask the producers for the previous call's time
    view.ViewTime = info.time
    low, high = _global_bounds_and_speed()
    speed_lut.RescaleTransferFunction(0.0, max(high[3], 1e-12))
    ranks = vtkProcessModule.GetProcessModule().GetGlobalController().GetNumberOfProcesses()
    rank_lut.RescaleTransferFunction(0.0, max(1.0, ranks - 1.0))
    _frame(low, high)
