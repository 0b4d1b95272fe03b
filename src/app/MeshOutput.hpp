#pragma once
// A mesh method's tetrahedra in the output files (/mesh in io/ParticleFile.hpp, shown by
// mesh.xdmf): the corners of each tet turned from vertices of the method's mesh_view into rows
// of the file's /particles datasets.
#include "io/ParticleWriter.hpp"
#include "methods/Method.hpp"

namespace nendo {

// Collective. method.mesh_view(space), each corner the file row of its particle, for a file that
// lists space.particles() (or a view in their order, app/OutputView.hpp) rank after rank. A
// corner that is a halo copy takes its owner's row, sent through the halo. Throws
// nendo::CollectiveError on every rank when a corner is neither owned here nor a halo copy.
FileMesh file_mesh(Space& space, const Method& method);

}  // namespace nendo
