#!/usr/bin/python3
"""Independent check of a nendo particle output file and of the XDMF series indexing it.

    check_particles.py FILE EXPECTED_COUNT [--xdmf particles.xdmf] [--grids K]
    check_particles.py --csv diagnostics.csv --rows K [--extra NAME ...]

FILE must hold the test particles of tests/io/ParticleWriterTest.cpp, whose values are functions
of the id (the C++ test uses the same ones):
    position = (id / 2, id / 4, -id)[:dimension]
    velocity = (id + 1/2, -2 id, id / 8)[:dimension]
    material = id % 5 - 2   (int32)
With --single, position and velocity are float32 (the values rounded to float); --labels checks
the method, units and material names of the labels test.
The XDMF check parses particles.xdmf with xml.etree and verifies that every DataItem names an
existing dataset of the declared shape and number type, that times and counts match the files,
and that every /particles dataset but position is an Attribute.
The CSV check reads diagnostics.csv with the csv module. Exit status 0 means every check passed.
"""
import argparse
import csv
import os
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def expected_values(ids, dimension):
    i = ids.astype(np.float64)
    position = np.stack([i * 0.5, i * 0.25, -i], axis=1)[:, :dimension]
    velocity = np.stack([i + 0.5, -2.0 * i, i * 0.125], axis=1)[:, :dimension]
    material = (ids % 5).astype(np.int32) - 2
    return position, velocity, material


def check_labels(path):
    """The labels of ParticleWriterTest's LabelsNameTheMethodTheUnitsAndTheMaterials."""
    with h5py.File(path, "r") as f:
        check(f.attrs.get("method") == "mpm", f"{path}: method {f.attrs.get('method')!r}")  # str, not bytes
        group = f["particles"]
        units = {name: group[name].attrs.get("unit") for name in group}
        check(units == {"id": None, "position": "m", "velocity": "m/s", "material": "1"}, f"{path}: units {units}")
        names = list(group["material"].attrs.get("names", []))
        check(names == ["ball", "jelly", "soft jelly"], f"{path}: material names {names!r}")


def check_particle_file(path, expected_count, single=False):
    with h5py.File(path, "r") as f:
        dimension = int(f.attrs["dimension"])
        check(dimension in (2, 3), f"{path}: dimension {dimension}")
        check("time" in f.attrs and f.attrs["time"].dtype == np.float64, f"{path}: time attribute")
        check("step" in f.attrs and f.attrs["step"].dtype == np.int64, f"{path}: step attribute")
        group = f["particles"]
        count = int(group.attrs["count"])
        check(count == expected_count, f"{path}: count attribute {count}, expected {expected_count}")
        ids = group["id"][...]
        check(group["id"].dtype == np.uint64 and ids.shape == (count,), f"{path}: id {group['id'].dtype} {ids.shape}")
        check(len(np.unique(ids)) == count, f"{path}: ids are not unique")
        floating = np.float32 if single else np.float64
        position = group["position"]
        check(position.dtype == floating and position.shape == (count, dimension),
              f"{path}: position {position.dtype} {position.shape}")
        want_position, want_velocity, want_material = expected_values(ids, dimension)
        want_position, want_velocity = want_position.astype(floating), want_velocity.astype(floating)
        check(np.array_equal(position[...], want_position), f"{path}: position values")
        if "velocity" in group:
            velocity = group["velocity"]
            check(velocity.dtype == floating and velocity.shape == (count, dimension),
                  f"{path}: velocity {velocity.dtype} {velocity.shape}")
            check(np.array_equal(velocity[...], want_velocity), f"{path}: velocity values")
        if "material" in group:
            material = group["material"]
            check(material.dtype == np.int32 and material.shape == (count,),
                  f"{path}: material {material.dtype} {material.shape}")
            check(np.array_equal(material[...], want_material), f"{path}: material values")
        vertices = f["xdmf/polyvertex"]
        check(vertices.shape == (count,) and np.array_equal(vertices[...], np.arange(count)),
              f"{path}: /xdmf/polyvertex is not 0..N-1")


NUMBER_TYPES = {("Float", "8"): ("f", 8), ("Float", "4"): ("f", 4), ("Int", "4"): ("i", 4), ("Int", "8"): ("iu", 8)}


def check_data_item(item, directory, where):
    """Returns (h5py file path, dataset path, shape) after checking the item, or None."""
    if not check(item is not None, f"{where}: no DataItem"):
        return None
    check(item.get("Format") == "HDF", f"{where}: Format {item.get('Format')}")
    text = (item.text or "").strip()
    if not check(":" in text, f"{where}: DataItem text {text!r}"):
        return None
    file_name, dataset = text.split(":", 1)
    check(not os.path.isabs(file_name), f"{where}: path {file_name} is not relative")
    path = os.path.join(directory, file_name)
    if not check(os.path.isfile(path), f"{where}: {path} does not exist"):
        return None
    shape = tuple(int(d) for d in item.get("Dimensions").split())
    with h5py.File(path, "r") as f:
        if not check(dataset in f, f"{where}: no dataset {dataset} in {path}"):
            return None
        d = f[dataset]
        check(d.shape == shape, f"{where}: {path}:{dataset} has shape {d.shape}, XDMF says {shape}")
        kind = NUMBER_TYPES.get((item.get("NumberType"), item.get("Precision")))
        check(kind is not None and d.dtype.kind in kind[0] and d.dtype.itemsize == kind[1],
              f"{where}: {dataset} is {d.dtype}, XDMF says {item.get('NumberType')} {item.get('Precision')}")
    return path, dataset, shape


def check_xdmf(xdmf_path, particle_file, grids):
    directory = os.path.dirname(os.path.abspath(xdmf_path))
    root = ET.parse(xdmf_path).getroot()
    check(root.tag == "Xdmf" and root.get("Version") == "3.0", "root is not <Xdmf Version=\"3.0\">")
    collection = root.find("Domain/Grid")
    if not check(collection is not None, "no Domain/Grid"):
        return
    check(collection.get("GridType") == "Collection" and collection.get("CollectionType") == "Temporal",
          "the top grid is not a temporal collection")
    members = collection.findall("Grid")
    if grids is not None:
        check(len(members) == grids, f"{len(members)} grids in the series, expected {grids}")
    files, times = [], []
    for grid in members:
        name = grid.get("Name")
        check(grid.get("GridType") == "Uniform", f"{name}: GridType {grid.get('GridType')}")
        time = float(grid.find("Time").get("Value"))
        times.append(time)
        topology = grid.find("Topology")
        check(topology.get("TopologyType") == "Polyvertex", f"{name}: topology {topology.get('TopologyType')}")
        n = int(topology.get("NumberOfElements"))
        found = check_data_item(topology.find("DataItem"), directory, f"{name} topology")
        if not found:
            continue
        path = found[0]
        files.append(os.path.basename(path))
        check(found[2] == (n,), f"{name}: topology DataItem shape {found[2]}")
        with h5py.File(path, "r") as f:
            dimension = int(f.attrs["dimension"])
            check(int(f["particles"].attrs["count"]) == n, f"{name}: NumberOfElements {n} != count")
            check(float(f.attrs["time"]) == time, f"{name}: Time {time} != file time {float(f.attrs['time'])}")
            datasets = set(f["particles"].keys())
        geometry = grid.find("Geometry")
        check(geometry.get("GeometryType") == ("XY" if dimension == 2 else "XYZ"),
              f"{name}: GeometryType {geometry.get('GeometryType')} in {dimension}D")
        found = check_data_item(geometry.find("DataItem"), directory, f"{name} geometry")
        check(found is not None and found[1] == "/particles/position", f"{name}: geometry is not the position")
        attributes = set()
        for attribute in grid.findall("Attribute"):
            label = f"{name} attribute {attribute.get('Name')}"
            check(attribute.get("Center") == "Node", f"{label}: Center {attribute.get('Center')}")
            found = check_data_item(attribute.find("DataItem"), directory, label)
            if not found:
                continue
            attributes.add(found[1].rsplit("/", 1)[1])
            check(found[1] == "/particles/" + attribute.get("Name"), f"{label}: refers to {found[1]}")
            check(found[2][0] == n, f"{label}: {found[2][0]} rows for {n} particles")
            components = 1 if len(found[2]) == 1 else found[2][1]
            want = {1: "Scalar", 3: "Vector", 6: "Tensor6", 9: "Tensor"}.get(components, "Matrix")
            check(attribute.get("AttributeType") == want,
                  f"{label}: AttributeType {attribute.get('AttributeType')} for {components} components")
        check(attributes == datasets - {"position"}, f"{name}: attributes {sorted(attributes)} != {sorted(datasets)}")
    check(times == sorted(times), f"times are not increasing: {times}")
    check(files == sorted(files), f"files are not in index order: {files}")
    if particle_file:
        check(os.path.basename(particle_file) in files, f"{particle_file} is not in the series")


def check_csv(path, rows, extra):
    columns = ["step", "time", "dt", "particles", "kinetic_energy", "elastic_energy",
               "momentum_x", "momentum_y", "momentum_z", "mass"] + extra
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        check(reader.fieldnames == columns, f"{path}: header {reader.fieldnames}")
        records = list(reader)
    check(len(records) == rows, f"{path}: {len(records)} rows, expected {rows}")
    for k, record in enumerate(records):
        # Row k of the C++ test: step 10 k, time k / 3, dt 1e-3 / 7, particles 100 + k, the others
        # simple functions of k, and extra column j = k + j / 10.
        check(int(record["step"]) == 10 * k, f"{path}: row {k} step {record['step']}")
        check(float(record["time"]) == k / 3.0, f"{path}: row {k} time {record['time']} (full precision?)")
        check(float(record["dt"]) == 1e-3 / 7.0, f"{path}: row {k} dt {record['dt']}")
        check(int(record["particles"]) == 100 + k, f"{path}: row {k} particles {record['particles']}")
        check(float(record["kinetic_energy"]) == 0.1 * k, f"{path}: row {k} kinetic_energy")
        check(float(record["momentum_y"]) == -k / 9.0, f"{path}: row {k} momentum_y")
        check(float(record["mass"]) == 2.5, f"{path}: row {k} mass")
        for j, name in enumerate(extra):
            check(float(record[name]) == k + j / 10.0, f"{path}: row {k} {name} {record[name]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file", nargs="?")
    parser.add_argument("expected_count", nargs="?", type=int)
    parser.add_argument("--xdmf")
    parser.add_argument("--grids", type=int)
    parser.add_argument("--csv")
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--extra", nargs="*", default=[])
    parser.add_argument("--single", action="store_true", help="floating fields are float32")
    parser.add_argument("--labels", action="store_true", help="check the labels of the labels test")
    args = parser.parse_args()
    if args.file is not None:
        check_particle_file(args.file, args.expected_count, args.single)
    if args.labels:
        check_labels(args.file)
    if args.xdmf:
        check_xdmf(args.xdmf, args.file, args.grids)
    if args.csv:
        check_csv(args.csv, args.rows, args.extra)
    for message in failures:
        print("check_particles.py: " + message, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
