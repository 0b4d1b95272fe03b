# script-version: 2
# Writes the tetrahedral mesh of a mesh method (fem: the active tets, with the cell array "level";
# shape matching has none) at every co-processing call: extracts/mesh_NNNNNN.pvtu (one .vtu
# piece per rank) relative to the run's output directory. Colour by "level" in ParaView.
#   mpirun -np 2 nendo run jobs/scenes/fem/cantilever-large.yaml --catalyst jobs/catalyst/mesh.py
from paraview.simple import *
from paraview import catalyst

mesh = TrivialProducer(registrationName="mesh")

mesh_writer = CreateExtractor("VTU", mesh, registrationName="mesh_writer")
mesh_writer.Writer.FileName = "mesh_{timestep:06d}.pvtu"
mesh_writer.Trigger = "TimeStep"
mesh_writer.Trigger.Frequency = 1

options = catalyst.Options()
options.ExtractsOutputDirectory = "extracts"
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1
