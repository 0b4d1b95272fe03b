# script-version: 2
# Renders PNG images while nendo runs: the particles coloured by speed over the blocks coloured by
# the rank that owns them. Writes images/view_NNNNNN.png (NNNNNN = step) in the output directory
# at every co-processing call (scene key catalyst.every_steps sets how often).
#   mpirun -np 2 nendo run SCENE --catalyst jobs/catalyst/render.py
# On a machine without a display, run it under a virtual one: xvfb-run -a mpirun -np 2 nendo ...
from paraview.simple import *
from paraview import catalyst
from paraview.modules.vtkRemotingCore import vtkProcessModule
from paraview.vtk.util.numpy_support import numpy_to_vtk, vtk_to_numpy
from paraview.vtk.vtkParallelCore import vtkCommunicator
import numpy as np

particles = TrivialProducer(registrationName="particles")
blocks = TrivialProducer(registrationName="blocks")

view = CreateView("RenderView")
view.ViewSize = [1280, 800]
# Catalyst's data information is this rank's only: with the default threshold a rank without
# particles would choose another delivery than the others (a gather to rank 0 instead of the
# redistribution for the translucent blocks) and the ranks would wait on each other forever.
view.RemoteRenderThreshold = 0.0
view.OrientationAxesVisibility = 1
view.Background = [1.0, 1.0, 1.0]
view.UseColorPaletteForBackground = 0

block_display = Show(blocks, view)
block_display.Representation = "Surface With Edges"
block_display.Opacity = 0.15
ColorBy(block_display, ("CELLS", "rank"))
rank_lut = GetColorTransferFunction("rank")
rank_lut.ApplyPreset("Set1", True)
rank_lut.InterpretValuesAsCategories = 0

particle_display = Show(particles, view)
particle_display.Representation = "Points"
particle_display.PointSize = 3
particle_display.RenderPointsAsSpheres = 1
ColorBy(particle_display, ("POINTS", "velocity", "Magnitude"))
speed_lut = GetColorTransferFunction("velocity")
speed_lut.ApplyPreset("Turbo", True)
speed_bar = GetScalarBar(speed_lut, view)
speed_bar.Title = "speed"
speed_bar.ComponentTitle = "(m/s)"
speed_bar.TitleColor = speed_bar.LabelColor = [0.1, 0.1, 0.1]
particle_display.SetScalarBarVisibility(view, True)

images = CreateExtractor("PNG", view, registrationName="images")
images.Writer.FileName = "view_{timestep:06d}.png"
images.Writer.ImageResolution = [1280, 800]
images.Trigger = "TimeStep"
images.Trigger.Frequency = 1

options = catalyst.Options()
options.ExtractsOutputDirectory = "images"
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1


_framed = False


def _allreduce(values, operation):
    controller = vtkProcessModule.GetProcessModule().GetGlobalController()
    send = numpy_to_vtk(np.ascontiguousarray(values, dtype=np.float64), deep=1)
    receive = send.NewInstance()
    controller.AllReduce(send, receive, operation)
    return vtk_to_numpy(receive).copy()


def _local_range(info, name):
    # A rank without particles has no arrays: its piece adds nothing to the range.
    array = info[name]
    return array.GetRange(-1 if name == "velocity" else 0) if array else (np.inf, -np.inf)


def catalyst_execute(info):
    # The speed range of this step over all ranks, and a camera that frames the material: a
    # three-quarter view of 3D scenes (front view of 2D ones) chosen at the first call. Every
    # rank must take the same decisions (the render is collective), hence the reductions.
    global _framed
    GetTimeKeeper().Time = info.time  # else the views ask the producers for the previous call's time
    view.ViewTime = info.time
    speed = _local_range(particles.PointData, "velocity")
    ranks = _local_range(blocks.CellData, "rank")
    bounds = particles.GetDataInformation().GetBounds() if particles.GetDataInformation().GetNumberOfPoints() \
        else (np.inf, -np.inf) * 3
    lows = _allreduce([speed[0], ranks[0], bounds[4]], vtkCommunicator.MIN_OP)
    highs = _allreduce([speed[1], ranks[1], bounds[5]], vtkCommunicator.MAX_OP)
    speed_lut.RescaleTransferFunction(lows[0], max(highs[0], lows[0] + 1e-12))
    rank_lut.RescaleTransferFunction(0.0, max(1.0, highs[1]))
    if not _framed:
        view.CameraFocalPoint = [0, 0, 0]
        view.CameraViewUp = [0, 1, 0]
        view.CameraPosition = [0.6, 0.5, 1.0] if highs[2] > lows[2] else [0, 0, 1]
        _framed = True
    view.ResetCamera(False)
