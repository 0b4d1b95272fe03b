# script-version: 2
# Writes globals.csv in the output directory: one row per co-processing call with the step, the
# time and global quantities of the particles (count, mass, kinetic energy, momentum, centre of
# mass, bounding box, largest speed). Each rank sums its own piece; one all-reduce per row, no
# particles gathered anywhere. Mass-weighted columns need the "mass" field (on by default).
#   mpirun -np 2 nendo run SCENE --catalyst jobs/catalyst/globals.py
from paraview.simple import *
from paraview import catalyst
from paraview.vtk.util.numpy_support import vtk_to_numpy, numpy_to_vtk
from paraview.modules.vtkRemotingCore import vtkProcessModule
from paraview.vtk.vtkParallelCore import vtkCommunicator
import numpy as np

particles = TrivialProducer(registrationName="particles")

options = catalyst.Options()
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 1

COLUMNS = ["step", "time", "particles", "mass", "kinetic_energy", "momentum_x", "momentum_y", "momentum_z",
           "center_x", "center_y", "center_z", "min_x", "min_y", "min_z", "max_x", "max_y", "max_z", "max_speed"]


def _allreduce(values, operation):
    controller = vtkProcessModule.GetProcessModule().GetGlobalController()
    send = numpy_to_vtk(np.ascontiguousarray(values, dtype=np.float64), deep=1)
    receive = send.NewInstance()
    controller.AllReduce(send, receive, operation)
    return vtk_to_numpy(receive).copy()


def _local_piece():
    particles.UpdatePipeline()
    return particles.GetClientSideObject().GetOutputDataObject(0)


def catalyst_initialize():
    if vtkProcessModule.GetProcessModule().GetPartitionId() == 0:
        with open("globals.csv", "w") as f:
            f.write(",".join(COLUMNS) + "\n")


def catalyst_execute(info):
    piece = _local_piece()
    n = piece.GetNumberOfPoints()
    x = vtk_to_numpy(piece.GetPoints().GetData()) if n else np.zeros((0, 3))
    point_data = piece.GetPointData()
    v = vtk_to_numpy(point_data.GetArray("velocity")) if n else np.zeros((0, 3))
    m = vtk_to_numpy(point_data.GetArray("mass")) if n and point_data.HasArray("mass") else np.zeros(n)
    speed2 = (v * v).sum(axis=1)
    sums = np.concatenate([[n, m.sum(), 0.5 * (m * speed2).sum()], (m[:, None] * v).sum(axis=0),
                           (m[:, None] * x).sum(axis=0)])
    sums = _allreduce(sums, vtkCommunicator.SUM_OP)
    lows = _allreduce(x.min(axis=0) if n else np.full(3, np.inf), vtkCommunicator.MIN_OP)
    highs = _allreduce(np.concatenate([x.max(axis=0) if n else np.full(3, -np.inf),
                                       [np.sqrt(speed2.max()) if n else 0.0]]), vtkCommunicator.MAX_OP)
    if vtkProcessModule.GetProcessModule().GetPartitionId() != 0:
        return
    mass = sums[1]
    center = sums[6:9] / mass if mass > 0 else np.full(3, np.nan)
    row = [info.timestep, info.time, int(sums[0]), mass, sums[2], *sums[3:6], *center, *lows, *highs]
    with open("globals.csv", "a") as f:
        f.write(",".join(repr(float(value)) if i > 2 else str(value) for i, value in enumerate(row)) + "\n")
