# script-version: 2
# Writes the particles and the blocks as ParaView files at every co-processing call (scene key
# catalyst.every_steps sets how often, e.g. --set catalyst.every_steps=10):
#   extracts/particles_NNNNNN.pvtp (one .vtp piece per rank) and extracts/blocks_NNNNNN.pvtu
# relative to the run's output directory. Open the .pvtp/.pvtu series in ParaView.
#   mpirun -np 2 nendo run SCENE --catalyst jobs/catalyst/extracts.py
from paraview.simple import *
from paraview import catalyst

particles = TrivialProducer(registrationName="particles")
blocks = TrivialProducer(registrationName="blocks")

particle_writer = CreateExtractor("VTP", particles, registrationName="particle_writer")
particle_writer.Writer.FileName = "particles_{timestep:06d}.pvtp"
particle_writer.Trigger = "TimeStep"
particle_writer.Trigger.Frequency = 1

block_writer = CreateExtractor("VTU", blocks, registrationName="block_writer")
block_writer.Writer.FileName = "blocks_{timestep:06d}.pvtu"
block_writer.Trigger = "TimeStep"
block_writer.Trigger.Frequency = 1

options = catalyst.Options()
options.ExtractsOutputDirectory = "extracts"
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1
