#!/usr/bin/env pvbatch
"""Renders one output of a nendo run as a PNG picture with ParaView: the particles of the run's
particles.xdmf at one output time, coloured by a particle field, with a colour bar.

Run it with ParaView's Python (pvbatch or pvpython). Debian's ParaView 5.11 renders through X,
so on a machine without a display give it a virtual one with xvfb-run:

    xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" pvbatch jobs/tools/nendo_picture.py OUTDIR \\
        [-o picture.png] [--field velocity] [--component magnitude|x|y|z|0|1|...] \\
        [--time T | --index I] [--size 1280x800] [--range LOW,HIGH] [--radius R] [--title TEXT] \\
        [--frame XMIN,XMAX,YMIN,YMAX[,ZMIN,ZMAX] [--outline]]

OUTDIR is a run's output directory (output.dir of the scene, or nendo run --output). The picture
shows the last output unless --time (the output nearest to T seconds) or --index (the I-th
output, from 0; negative counts from the end) says otherwise. The colour is --field (default
velocity; vectors and tensors by their magnitude unless --component picks one) on a Turbo map
from the field's least to its largest value at that time, or over --range. Particles are drawn
as discs (ParaView's Point Gaussian representation) of radius --radius metres, by default half
the typical distance between neighbouring particles at the first output. 2D runs are seen from the front (+z) with a
parallel projection, 3D runs from a three-quarter view, framed on the particles or on the region
--frame gives (in metres); --outline draws that region's edges in grey, e.g. the walls and the
ground of the scene. Write a list that starts with a negative number with "=": --frame=-1,1,0,2.

Mistakes (a directory without particles.xdmf, a field the output does not have, a time outside
the run) are reported on one line starting with "nendo_picture: error:" and exit code 2; so are
a Python without ParaView (run the script with pvbatch) and no X display where ParaView cannot
render off-screen (the message gives the xvfb-run command line to use instead).
"""
import argparse
import ctypes
import ctypes.util
import importlib.util
import math
import os
import shlex
import sys
from xml.etree import ElementTree

USAGE_EXIT = 2
MATERIAL_SHARE = 0.8  # the material takes the left of the picture, the colour bar the rest


def fail(message):
    """Prints a one-line error on stderr and stops with exit code 2."""
    print(f"nendo_picture: error: {message}", file=sys.stderr, flush=True)
    sys.exit(USAGE_EXIT)


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own mistakes in the same one-line form
        fail(message)


def renders_offscreen():
    """True if this ParaView build has a render window that needs no X server (EGL or OSMesa);
    Debian's ParaView 5.11 has neither."""
    try:
        from vtkmodules import vtkRenderingOpenGL2 as opengl
    except ImportError:
        return False
    return any(hasattr(opengl, name) for name in ("vtkEGLRenderWindow", "vtkOSOpenGLRenderWindow"))


def x_display_problem():
    """Why ParaView could not open an X display (None when it can): asked of libX11 itself, since
    a DISPLAY may be set but point at no running server."""
    display = os.environ.get("DISPLAY", "")
    if not display:
        return "DISPLAY is not set"
    library = ctypes.util.find_library("X11")
    if library is None:
        return None  # cannot tell: let ParaView try
    x11 = ctypes.CDLL(library)
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    connection = x11.XOpenDisplay(display.encode())
    if not connection:
        return f"cannot open the X display DISPLAY={display}"
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    x11.XCloseDisplay(connection)
    return None


def require_paraview_and_display():
    """Stops with one line saying what to run instead when ParaView is missing or cannot render here."""
    command = " ".join(shlex.quote(a) for a in [os.path.relpath(os.path.abspath(__file__))] + sys.argv[1:])
    if importlib.util.find_spec("paraview") is None:
        fail(f"{sys.executable} has no ParaView: run this script with ParaView's Python, "
             f"`pvbatch {command}` (Debian package paraview)")
    problem = None if renders_offscreen() else x_display_problem()
    if problem:
        fail(f"no display to render on ({problem}), and this ParaView renders only through X. "
             f"Give it a virtual one (Debian package xvfb): "
             f"xvfb-run -a -s \"-screen 0 1280x1024x24 -noreset\" pvbatch {command}")


def parse_size(text):
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        fail(f"--size '{text}': expected WIDTHxHEIGHT in pixels, e.g. 1280x800")
    if not (16 <= width <= 8192 and 16 <= height <= 8192):
        fail(f"--size '{text}': width and height must be between 16 and 8192 pixels")
    return width, height


def parse_range(text):
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        fail(f"--range '{text}': expected LOW,HIGH, e.g. 0,2.5")
    if not high > low:
        fail(f"--range '{text}': HIGH must be above LOW")
    return low, high


def parse_frame(text):
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) not in (4, 6) or any(high <= low for low, high in zip(values[::2], values[1::2])):
        fail(f"--frame '{text}': expected XMIN,XMAX,YMIN,YMAX (2D) or XMIN,XMAX,YMIN,YMAX,ZMIN,ZMAX (3D), "
             "each MIN below its MAX")
    return values


def parse_arguments(argv):
    parser = Parser(prog="nendo_picture.py", description=__doc__.split("\n\n")[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir", help="output directory of a nendo run (holds particles.xdmf)")
    parser.add_argument("-o", "--output", default="picture.png", help="PNG file to write (default picture.png)")
    parser.add_argument("--field", default="velocity", help="particle field to colour by (default velocity)")
    parser.add_argument("--component", default="magnitude",
                        help="magnitude (default), x, y, z or a component index, for fields of several components")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--time", type=float, help="simulated time in s: the output nearest to it")
    when.add_argument("--index", type=int, help="index of the output, from 0; negative counts from the end")
    parser.add_argument("--size", default="1280x800", help="picture size WIDTHxHEIGHT in pixels (default 1280x800)")
    parser.add_argument("--range", help="colour range LOW,HIGH (default: the field's range at that time)")
    parser.add_argument("--radius", type=float,
                        help="drawn particle radius in m (default: half the neighbour distance at the first output)")
    parser.add_argument("--frame", help="frame this region instead of the particles: XMIN,XMAX,YMIN,YMAX[,ZMIN,ZMAX] in m")
    parser.add_argument("--outline", action="store_true", help="draw the edges of the --frame region in grey")
    parser.add_argument("--title", help="colour bar title (default: the field and component)")
    args = parser.parse_args(argv)
    args.size = parse_size(args.size)
    args.range = parse_range(args.range) if args.range else None
    args.frame = parse_frame(args.frame) if args.frame else None
    if args.outline and not args.frame:
        fail("--outline draws the --frame region: give --frame too")
    if args.radius is not None and not args.radius > 0:
        fail(f"--radius {args.radius}: must be > 0")
    return args


def series_path(outdir):
    if not os.path.isdir(outdir):
        fail(f"'{outdir}' is not a directory (give the output directory of a nendo run)")
    path = os.path.join(outdir, "particles.xdmf")
    if not os.path.isfile(path):
        fail(f"'{outdir}' has no particles.xdmf (is it the output directory of a nendo run that has started?)")
    return path


def choose_time(times, args):
    """The output time to show, from --time, --index or the last output."""
    if not times:
        return None  # a series of one output without a time
    if args.time is not None:
        if not times[0] - 1e-9 <= args.time <= times[-1] + 1e-9:
            fail(f"--time {args.time:g}: the outputs span {times[0]:g} to {times[-1]:g} s")
        return min(times, key=lambda t: abs(t - args.time))
    index = -1 if args.index is None else args.index
    if not -len(times) <= index < len(times):
        fail(f"--index {index}: there are {len(times)} outputs (0 to {len(times) - 1}, or -1 for the last)")
    return times[index]


def component_of(field, array, text):
    """Which component to colour by: (ParaView's component for ColorBy, or None for a scalar;
    the index for vtkDataArray.GetRange, -1 being the magnitude; a label for the colour bar)."""
    count = array.GetNumberOfComponents()
    if count == 1:
        return None, 0, field
    if text.lower() in ("magnitude", "mag"):
        return "Magnitude", -1, f"{field} magnitude"
    axes = "xyz"[:count] if count <= 3 else ""
    if text and text.lower() in axes:
        index = axes.index(text.lower())
    else:
        index = int(text) if text.isdigit() else -1
    if not 0 <= index < count:
        fail(f"--component '{text}': field '{field}' has {count} components; "
             f"give magnitude{', ' + ', '.join(axes) if axes else ''} or an index 0 to {count - 1}")
    return str(index), index, f"{field} {axes[index] if axes else index}"


def dimension_of(path):
    """2 or 3, from the geometry type of the series' first output (XY or XYZ)."""
    try:
        geometry = ElementTree.parse(path).getroot().find(".//Geometry")
    except ElementTree.ParseError as error:
        fail(f"{path} is not a readable XDMF file ({error})")
    if geometry is None:
        fail(f"{path} has no outputs yet")
    return 2 if geometry.get("GeometryType") == "XY" else 3


def typical_spacing(dataset):
    """The median distance from a sample of (at most about 500) particles to their nearest neighbour."""
    from paraview.vtk.vtkCommonCore import vtkIdList
    from paraview.vtk.vtkCommonDataModel import vtkStaticPointLocator

    count = dataset.GetNumberOfPoints()
    if count < 2:
        return None
    locator = vtkStaticPointLocator()
    locator.SetDataSet(dataset)
    locator.BuildLocator()
    closest, distances = vtkIdList(), []
    for i in range(0, count, max(1, count // 500)):
        point = dataset.GetPoint(i)
        locator.FindClosestNPoints(2, point, closest)
        other = dataset.GetPoint(closest.GetId(1) if closest.GetId(0) == i else closest.GetId(0))
        distance = sum((a - b) ** 2 for a, b in zip(point, other)) ** 0.5
        if distance > 0:
            distances.append(distance)
    distances.sort()
    return distances[len(distances) // 2] if distances else None


def padded(bounds, margin):
    """Bounds (xmin, xmax, ymin, ymax, zmin, zmax) grown by margin on every side."""
    return [value + (margin if k % 2 else -margin) for k, value in enumerate(bounds)]


def frame_2d(view, box, size):
    """Front view (+z) with a parallel projection; the box fills the picture left of the colour bar."""
    xmin, xmax, ymin, ymax = box[:4]
    width, height = max(xmax - xmin, 1e-9), max(ymax - ymin, 1e-9)
    aspect = size[0] / size[1]
    scale = 0.5 * max(height / 0.9, width / (0.92 * MATERIAL_SHARE * aspect))  # half the visible height
    visible_width = 2 * scale * aspect
    focus = [(xmin + xmax) / 2 + (1 - MATERIAL_SHARE) / 2 * visible_width, (ymin + ymax) / 2, 0.0]
    view.CameraParallelProjection = 1
    view.CameraFocalPoint = focus
    view.CameraPosition = [focus[0], focus[1], 10 * max(width, height)]
    view.CameraViewUp = [0, 1, 0]
    view.CameraParallelScale = scale


def frame_3d(view, box, size):
    """A three-quarter view from the front right, above, with y up: the box fills the picture left
    of the colour bar."""
    view.CameraFocalPoint = [0, 0, 0]
    view.CameraPosition = [0.6, 0.5, 1.0]
    view.CameraViewUp = [0, 1, 0]
    view.SMProxy.ResetCamera(*box)
    camera = view.GetActiveCamera()
    camera.Zoom(0.9)
    # pan so that the material moves to the middle of the part left of the colour bar
    half_height = camera.GetDistance() * math.tan(math.radians(camera.GetViewAngle() / 2))
    shift = (1 - MATERIAL_SHARE) / 2 * 2 * half_height * size[0] / size[1]
    direction = [f - p for f, p in zip(camera.GetFocalPoint(), camera.GetPosition())]
    up = camera.GetViewUp()
    right = [direction[1] * up[2] - direction[2] * up[1], direction[2] * up[0] - direction[0] * up[2],
             direction[0] * up[1] - direction[1] * up[0]]
    norm = math.sqrt(sum(r * r for r in right))
    offset = [shift * r / norm for r in right]
    view.CameraFocalPoint = [f + o for f, o in zip(camera.GetFocalPoint(), offset)]
    view.CameraPosition = [p + o for p, o in zip(camera.GetPosition(), offset)]


def show_outline(pv, view, box):
    """The edges of the box (2D: a rectangle at z = 0) as grey lines."""
    box = list(box) + [0.0, 0.0] if len(box) == 4 else box
    source = pv.Box(registrationName="frame", XLength=box[1] - box[0], YLength=box[3] - box[2],
                    ZLength=box[5] - box[4], Center=[(box[0] + box[1]) / 2, (box[2] + box[3]) / 2,
                                                     (box[4] + box[5]) / 2])
    outline = pv.Show(source, view)
    outline.SetRepresentationType("Outline")
    outline.AmbientColor = outline.DiffuseColor = [0.45, 0.45, 0.45]
    outline.LineWidth = 2.0


def read_output(pv, path, args):
    """The reader, the chosen output time, and that output's particles as a VTK data set."""
    reader = pv.Xdmf3ReaderS(registrationName="particles", FileName=[path])
    reader.UpdatePipelineInformation()
    values = reader.TimestepValues  # a list, a single number for one output, or empty
    times = list(values) if hasattr(values, "__len__") else [values]
    time = choose_time(times, args)
    reader.UpdatePipeline(time) if time is not None else reader.UpdatePipeline()
    dataset = pv.servermanager.Fetch(reader)
    if dataset is None or dataset.GetNumberOfPoints() == 0:
        fail(f"{path}: the output at t = {time} s has no particles")
    return reader, times, time, dataset


def field_array(dataset, field, path):
    point_data = dataset.GetPointData()
    array = point_data.GetArray(field)
    if array is None:
        names = sorted(point_data.GetArrayName(i) for i in range(point_data.GetNumberOfArrays()))
        fail(f"no particle field '{field}' in {path}; it has: {', '.join(names)} "
             "(the scene's output.fields decides which are written)")
    return array


def default_radius(pv, reader, times, dataset):
    """Half the neighbour distance of the first output (the seeding lattice, before anything moved)."""
    spacing = None
    if len(times) > 1:
        reader.UpdatePipeline(times[0])
        spacing = typical_spacing(pv.servermanager.Fetch(reader))
    spacing = spacing or typical_spacing(dataset)
    if not spacing:
        bounds = dataset.GetBounds()
        spacing = 0.01 * max(bounds[1] - bounds[0], bounds[3] - bounds[2], bounds[5] - bounds[4], 1e-3)
    return 0.5 * spacing


def colour_bar(pv, view, lut, title):
    bar = pv.GetScalarBar(lut, view)
    bar.Title = title
    bar.ComponentTitle = ""
    bar.HorizontalTitle = 1
    bar.TitleColor = bar.LabelColor = [0.1, 0.1, 0.1]
    bar.TitleFontSize = bar.LabelFontSize = 18
    bar.RangeLabelFormat = "%-#.3g"
    bar.WindowLocation = "Any Location"
    bar.Position = [MATERIAL_SHARE + 0.02, 0.1]
    bar.ScalarBarLength = 0.75
    bar.Visibility = 1


def render(args):
    path = series_path(args.outdir)
    dimension = dimension_of(path)
    if args.frame and len(args.frame) != 2 * dimension:
        fail(f"--frame: the run is {dimension}D; give {2 * dimension} numbers (XMIN,XMAX,YMIN,YMAX"
             f"{',ZMIN,ZMAX' if dimension == 3 else ''})")
    directory = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(directory):
        fail(f"-o {args.output}: the directory {directory} does not exist")
    require_paraview_and_display()
    from paraview import simple as pv  # after the checks: importing ParaView takes seconds

    reader, times, time, dataset = read_output(pv, path, args)
    array = field_array(dataset, args.field, path)
    component, index, label = component_of(args.field, array, args.component)
    radius = args.radius or default_radius(pv, reader, times, dataset)

    view = pv.CreateView("RenderView")
    view.ViewSize = list(args.size)
    view.ViewTime = time if time is not None else 0.0
    view.UseColorPaletteForBackground = 0
    view.Background = [1.0, 1.0, 1.0]
    view.OrientationAxesVisibility = 1
    view.OrientationAxesLabelColor = [0.1, 0.1, 0.1]

    display = pv.Show(reader, view)
    display.SetRepresentationType("Point Gaussian")
    display.ShaderPreset = "Plain circle" if dimension == 2 else "Sphere"
    display.GaussianRadius = radius
    pv.ColorBy(display, ("POINTS", args.field) + ((component,) if component else ()))
    lut = pv.GetColorTransferFunction(args.field)
    lut.ApplyPreset("Turbo", True)
    low, high = args.range or array.GetRange(index)
    if high <= low:  # a uniform field: any range shows its one colour
        high = low + max(abs(low) * 1e-6, 1e-12)
    lut.RescaleTransferFunction(low, high)
    display.SetScalarBarVisibility(view, True)

    caption = pv.Show(pv.Text(registrationName="time", Text=f"t = {time:.4g} s" if time is not None else ""), view)
    caption.Color = [0.1, 0.1, 0.1]
    caption.FontSize = 18
    caption.WindowLocation = "Upper Left Corner"

    if args.outline:
        show_outline(pv, view, args.frame)
    pv.Render(view)  # the first render resets the camera and the colour bar's title: set them after it
    colour_bar(pv, view, lut, args.title or label)
    box = args.frame or padded(dataset.GetBounds(), radius)
    if dimension == 2:
        frame_2d(view, box, args.size)
    else:
        frame_3d(view, box, args.size)
    pv.Render(view)
    pv.SaveScreenshot(args.output, view, ImageResolution=list(args.size), TransparentBackground=0)
    when = "" if time is None else f" at t = {time:g} s"
    print(f"{args.output}: {label}{when}, {dataset.GetNumberOfPoints()} particles, "
          f"colours {low:.4g} to {high:.4g}, particle radius {radius:.3g} m")


if __name__ == "__main__":
    render(parse_arguments(sys.argv[1:]))
