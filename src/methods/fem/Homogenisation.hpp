#pragma once
// The precomputation of spec 004 §5 (H4, H5): for every tet below the finest level, the coarse
// elastic constants D_T and the linear ranges α_min/α_max^(m) from quasi-static relaxations of its
// finest descendants under the six basis strains (§4.2, §4.3), each relaxation a Newton solve with
// a PETSc KSP on PETSC_COMM_SELF. Results are cached by similarity (the tet's rest edge matrix up
// to translation and scale) and by the fine materials inside, so a Kuhn box of one material costs
// a handful of homogenisations per level. Each class is computed once, by a rank holding its first
// tet, and sent to the ranks holding its members (no rank lists every class), so a tet's constants
// are bitwise the same however the hierarchy is held (whole or partial) and on any rank count.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <vector>

#include "methods/fem/DedupedTable.hpp"
#include "methods/fem/StvkElement.hpp"
#include "methods/fem/TetHierarchy.hpp"

namespace nendo::fem {

// The material of one finest tet (H1): D_e and ρ_e.
struct FineMaterial {
  Stiffness D;
  Real density = 0;
};

struct FineMaterialFields {
  std::array<Real, 37> operator()(const FineMaterial& m) const {
    std::array<Real, 37> fields;
    std::copy_n(m.D.data(), 36, fields.begin());
    fields[36] = m.density;
    return fields;
  }
};
// Per finest tet (indexed by finest tet − level_begin[max_level]), each distinct material once.
using FineMaterials = DedupedTable<FineMaterial, FineMaterialFields>;

struct HomogenisationSettings {
  Real linear_tolerance = 0.05;  // δ_lin (spec §7)
  bool vertices_only = false;    // spec §10 C2's literal reading: only the coarse corners held
  bool fast_path = true;         // H4c: a homogeneous material skips the relaxations (same results)
};

// What a tet of any level carries into the run (H4g; H5 for the finest: bounds ±infinity).
struct TetConstants {
  Stiffness D;
  std::array<Real, 6> alpha_min, alpha_max;
  Real density = 0;
};
struct TetConstantsFields {
  std::array<Real, 49> operator()(const TetConstants& c) const {
    std::array<Real, 49> fields;
    std::copy_n(c.D.data(), 36, fields.begin());
    std::copy(c.alpha_min.begin(), c.alpha_min.end(), fields.begin() + 36);
    std::copy(c.alpha_max.begin(), c.alpha_max.end(), fields.begin() + 42);
    fields[48] = c.density;
    return fields;
  }
};
using TetConstantsTable =
    DedupedTable<TetConstants, TetConstantsFields>;  // per tet, each distinct value once

// One homogenisation (H4a-H4f) of tet t: the samples α (sorted) and S̄(α) per basis m, D_T, bounds.
struct StressStrainCurves {
  std::vector<Real> alpha;                   // the set A of H4d, increasing, α > −0.5
  std::array<std::vector<Voigt>, 6> stress;  // S̄(α) per basis m and sample
  TetConstants constants;
};

// Tet t's rest shape, from its corners' rest positions (the same bits wherever it is computed).
RestShape tet_rest_shape(const TetHierarchy& h, Index t);

// The sample set A of H4d (both signs, increasing).
std::vector<Real> strain_samples();

// H4 for one tet (serial). `fine` is indexed by finest tet − level_begin[max_level].
StressStrainCurves homogenise_tet(const TetHierarchy& h, Index t, const FineMaterials& fine,
                                  const HomogenisationSettings& settings);

// H4 and H5 for every tet of the hierarchy (whole, or this rank's part), indexed by tet. Collective
// over comm.
TetConstantsTable homogenise(MPI_Comm comm, const TetHierarchy& h, const FineMaterials& fine,
                             const HomogenisationSettings& settings);

}  // namespace nendo::fem
