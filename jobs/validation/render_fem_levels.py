# Renders a fem run's mesh.xdmf at its last output, the active tets coloured by hierarchy level
# (the spec 004 pictures: level 0 where the beam is straight, finer where it bends).
#   xvfb-run -a pvpython jobs/validation/render_fem_levels.py OUTPUT_DIR IMAGE.png
import sys

from paraview.simple import *

directory, image = sys.argv[1], sys.argv[2]
reader = Xdmf3ReaderS(registrationName="mesh", FileName=[directory + "/mesh.xdmf"])
scene = GetAnimationScene()
scene.UpdateAnimationUsingDataTimeSteps()
scene.AnimationTime = reader.TimestepValues[-1]
view = CreateView("RenderView")
view.ViewSize = [1200, 500]
view.UseColorPaletteForBackground = 0
view.Background = [1, 1, 1]
view.OrientationAxesVisibility = 0
display = Show(reader, view)
display.SetRepresentationType("Surface With Edges")
display.EdgeColor = [0.2, 0.2, 0.2]
ColorBy(display, ("CELLS", "level"))
lut = GetColorTransferFunction("level")
lut.ApplyPreset("Viridis (matplotlib)", True)
levels = reader.CellData["level"].GetRange()
lut.RescaleTransferFunction(0, max(1, levels[1]))
bar = GetScalarBar(lut, view)
bar.Title = "level"
bar.ComponentTitle = ""
bar.TitleColor = bar.LabelColor = [0, 0, 0]
bar.RangeLabelFormat = "%.0f"
bar.LabelFormat = "%.0f"
bar.Visibility = 1
view.CameraPosition = [0.2, -1.2, 0.0]
view.CameraFocalPoint = [0.2, 0.05, -0.03]
view.CameraViewUp = [0, 0, 1]
view.ResetCamera()
view.GetActiveCamera().Zoom(1.6)
Render(view)
SaveScreenshot(image, view, ImageResolution=[1200, 500])
