"""Opens an XDMF series with ParaView (pvpython) and prints what the reader sees, one fact per line.

Usage: pvpython paraview_open.py SERIES.xdmf
"""
import sys

from paraview.simple import OpenDataFile

reader = OpenDataFile(sys.argv[1])
reader.UpdatePipelineInformation()
times = list(reader.TimestepValues)
reader.UpdatePipeline(times[-1])
info = reader.GetDataInformation()
print("reader", reader.GetXMLName())
print("timesteps", len(times))
print("points", info.GetNumberOfPoints())
print("cells", info.GetNumberOfCells())
for i in range(len(reader.PointData)):
    array = reader.PointData.GetArray(i)
    low, high = array.GetRange(0)
    print("array", array.GetName(), array.GetNumberOfComponents(), array.GetDataTypeAsString(), repr(low), repr(high))
for i in range(len(reader.CellData)):
    array = reader.CellData.GetArray(i)
    low, high = array.GetRange(0)
    print("cellarray", array.GetName(), array.GetNumberOfComponents(), repr(low), repr(high))
