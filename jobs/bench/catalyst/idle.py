# script-version: 2
# The benchmark's script that never triggers: an extract of the particles once every 10^9 steps,
# so every step pays only for asking (RequestDataDescription), as a script that wants nothing
# this step would. Used by jobs/bench/catalyst/run.sh.
from paraview.simple import *
from paraview import catalyst

particles = TrivialProducer(registrationName="particles")
writer = CreateExtractor("VTP", particles, registrationName="writer")
writer.Writer.FileName = "particles_{timestep:09d}.pvtp"
writer.Trigger = "TimeStep"
writer.Trigger.Frequency = 1000000000

options = catalyst.Options()
options.ExtractsOutputDirectory = "extracts"
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1000000000
