#pragma once
// The coarse level of implicit MPM's geometric multigrid (solvers/GeometricMultigrid): the block
// grid coarsened by 2 per axis. Each grid block of B^D nodes keeps its key and its owner and holds
// the (B/2)^D coarse nodes of spacing 2Δx that sit on its even fine nodes, so the coarse level
// needs no partition of its own; the numbers of the coarse nodes of neighbouring blocks owned
// elsewhere are asked of their owners once per layout, and only the coarse nodes something
// reaches become unknowns. The coarse operator is rediscretised:
// the particles' stiffness h² V⁰ ∂P/∂F (spec §10.1, eq. 196–197), pulled back through Fⁿ, is summed
// per fine cell into one quadrature point at the cell's centre and integrated with the same
// B-spline kernel at spacing 2Δx (a cell's stencil then reaches 2 coarse blocks at most, like a
// particle's on the fine grid, so the coarse windows have the fine windows' shape), and the mass
// likewise (a coarse node the kernel's tail reaches gets the tail of both). The colliders
// constrain coarse nodes as they do fine ones. Interpolation: linear per axis from the even fine
// nodes, projected onto the free directions of both nodes (sampling the coarse B-spline field at
// the fine nodes instead took 10 times the CG iterations on a clamped 3-D beam).
#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "decomposition/Space.hpp"
#include "decomposition/SparseExchange.hpp"
#include "materials/ElasticHessian.hpp"
#include "methods/mpm/GridKernels.hpp"
#include "methods/mpm/StencilPairs.hpp"
#include "solvers/CoarseSpace.hpp"
#include "solvers/DofMap.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo {

template <int D, class Kernel>
class ImplicitCoarseGrid final : public CoarseSpace {
  using Kernels = GridKernels<D, Kernel>;
  using Stencil = typename Kernels::Stencil;
  using Mat = Eigen::Matrix<Real, D, D>;
  using Vec = Eigen::Matrix<Real, D, 1>;
  using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;
  static constexpr int N = Kernel::kNodes;
  static constexpr int DD = D * D;
  using Tangent = Eigen::Matrix<Real, DD, DD>;
  using Pairs = StencilPairs<D, Kernel::kNodes>;
  static constexpr int kInterpolants = 1 << D;  // coarse nodes per fine node, at most

 public:
  // The problem's side, for the current layout and linearisation point.
  struct Fine {
    const DofMap* dofs;
    std::function<Mat(PetscInt)> projector;         // of owned fine node l
    std::function<Mat(const Real*)> constraint;     // the colliders' projector at a position
    const std::vector<Real>* density;               // per material
    const std::vector<ElasticHessian<D>>* hessian;  // per particle
    Real h;                                         // the step the Hessian is scaled by
  };

  // B must be even for the fine nodes of even coordinates to fill whole coarse blocks.
  static bool supported(const BlockGeometry& g) { return g.block % 2 == 0; }

  explicit ImplicitCoarseGrid(MPI_Comm comm) : exchange_(comm) {}

  // Numbers the coarse nodes of this layout. Collective.
  void setup(Space& space, Fine fine) {
    space_ = &space, fine_ = std::move(fine);
    const BlockGeometry& g = space.geometry();
    half_ = g.block / 2;
    coarse_geometry_ = g;
    coarse_geometry_.dx = 2 * g.dx, coarse_geometry_.block = half_;
    nodes_per_block_ = D == 3 ? half_ * half_ * half_ : half_ * half_;
    extent_ = half_ + GhostExchange::kWindowLower + GhostExchange::kWindowUpper;
    window_nodes_ = D == 3 ? extent_ * extent_ * extent_ : extent_ * extent_;
    const GhostExchange& ghost = space.ghost();
    long long count = static_cast<long long>(ghost.grid_blocks()) * nodes_per_block_, first = 0;
    MPI_Exscan(&count, &first, 1, MPI_LONG_LONG, MPI_SUM, space.comm());
    grid_first_ = space.rank() == 0 ? 0 : static_cast<PetscInt>(first);
    learn_remote_bases();
    std::vector<PetscInt> referenced;
    build_windows(referenced);
    build_interpolation(referenced);
    keep_referenced(referenced);
  }

  // CoarseSpace
  int block_size() const override { return D; }
  PetscInt owned_nodes() const override { return static_cast<PetscInt>(owned_.size()); }
  PetscInt interpolation_width() const override { return kInterpolants; }

  void interpolation(::Mat P) override {
    constexpr int C = kInterpolants;
    PetscInt cols[C];
    Real rows[C * DD];
    for (PetscInt l = 0; l < fine_.dofs->owned_nodes(); ++l) {
      const int count = static_cast<int>(interpolation_count_[l]);
      const Interpolant* in = interpolants_.data() + C * l;
      // Blocked rows take the row-major blocks of one block row side by side: [a][col][t].
      for (int c = 0; c < count; ++c) {
        cols[c] = in[c].column;
        for (int a = 0; a < D; ++a)
          for (int t = 0; t < D; ++t) rows[(a * count + c) * D + t] = in[c].block(a, t);
      }
      const PetscInt row = fine_.dofs->first_node() + l;
      petsc_call(MatSetValuesBlocked(P, 1, &row, count, cols, rows, INSERT_VALUES), "MatSetValuesBlocked(P)");
    }
  }

  void assemble(::Mat A) override {
    const ParticleSet& ps = space_->particles();
    const ParticleBlocks& blocks = space_->blocks();
    const BlockGeometry& g = space_->geometry();
    const Real* x = ps.positions();
    const Real* F = ps.real("F");
    const Real* V0 = ps.real("volume");
    const int B = g.block, cells = D == 3 ? B * B * B : B * B;
    const std::size_t W = static_cast<std::size_t>(window_nodes_);
    const std::int32_t* material = ps.has_field("material") ? ps.int32("material") : nullptr;
    cell_tangent_.assign(static_cast<std::size_t>(cells) * DD * DD, 0.0);
    cell_mass_.assign(cells, 0.0);
    occupied_.assign(cells, 0);
    pairs_.reset(W);
    const Real h2 = fine_.h * fine_.h;
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      if (blocks.begin(b) == blocks.end(b)) continue;
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      // Each particle's stiffness, pulled back through Fⁿ (K_rq = ∇W_rᵀ Ĉ ∇W_q with the blocks
      // Ĉ_ατ = Fⁿ C_ατ Fⁿᵀ over (β, σ)), summed into its cell.
      for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
        int cell = 0, stride = 1;
        for (int a = 0; a < D; ++a, stride *= B) {
          const std::int64_t c = g.cell(x + D * p, a) - std::int64_t(cb[a]) * B;
          cell += stride * static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(c, 0), B - 1));
        }
        const Mat Fn = Eigen::Map<const RowMat>(F + DD * p);
        const Tangent C = (*fine_.hessian)[p].matrix();
        Eigen::Map<Tangent> sum(cell_tangent_.data() + std::size_t(cell) * DD * DD);
        const Real scale = h2 * V0[p];
        for (int a = 0; a < D; ++a)
          for (int t = 0; t < D; ++t) {
            const Mat block = C.template block<D, D>(a * D, t * D);
            sum.template block<D, D>(a * D, t * D) +=
                scale * Fn.lazyProduct(block).lazyProduct(Fn.transpose());
          }
        cell_mass_[cell] += (*fine_.density)[material ? material[p] : 0] * V0[p];
        occupied_[cell] = 1;
      }
      const PetscInt* index = window_index_.data() + b * W;
      const int* projector = window_projector_.data() + b * W;
      for (int cell = 0; cell < cells; ++cell) {
        if (!occupied_[cell]) continue;
        occupied_[cell] = 0;
        Eigen::Map<Tangent> Cmap(cell_tangent_.data() + std::size_t(cell) * DD * DD);
        const Tangent C = Cmap;
        Cmap.setZero();
        Real centre[3] = {0, 0, 0};
        const int local[3] = {cell % B, (cell / B) % B, cell / (B * B)};
        for (int a = 0; a < D; ++a)
          centre[a] = g.origin[a] + (std::int64_t(cb[a]) * B + local[a] + 0.5) * g.dx;
        add_pairs(Kernels::stencil(coarse_geometry_, cb, centre), C, cell_mass_[cell]);
        cell_mass_[cell] = 0;
      }
      insert_pairs(A, index, projector);
    }
    send_rows(A);
    // The constrained part (I − P) of each owned coarse node, and every owned diagonal block.
    for (PetscInt n = 0; n < owned_nodes(); ++n) {
      const RowMat block = Mat::Identity() - owned_projector(n);
      const PetscInt row = first_ + n;
      petsc_call(MatSetValuesBlocked(A, 1, &row, 1, &row, block.data(), ADD_VALUES), "MatSetValuesBlocked");
    }
  }

  void coordinates(Real* xyz) override {
    for (PetscInt n = 0; n < owned_nodes(); ++n) {
      std::int64_t I[3];
      owned_coords(n, I);
      Real x[3];
      coarse_position(I, x);
      for (int a = 0; a < D; ++a) xyz[D * n + a] = x[a];
    }
  }

 private:
  // One quadrature point's blocks K_rq = Σ_βσ ∇W_rβ Ĉ_(αβ),(τσ) ∇W_qσ and its lumped mass W_r m I
  // into the window's pair table.
  void add_pairs(const Stencil& s, const Tangent& C, Real mass) {
    constexpr int S = Pairs::S;
    std::size_t node[S];
    int offset[S];
    Vec gradient[S];
    int k = 0;
    Real weight[S];
    Kernels::for_each_node(extent_, extent_, s, [&](std::size_t w, int i, int j, int kk) {
      node[k] = w, offset[k] = Pairs::offset(i, j, kk);
      weight[k] = s.w[0][i] * s.w[1][j] * (D == 3 ? s.w[2][kk] : 1);
      if constexpr (D == 3)
        gradient[k] << s.dw[0][i] * s.w[1][j] * s.w[2][kk], s.w[0][i] * s.dw[1][j] * s.w[2][kk],
            s.w[0][i] * s.w[1][j] * s.dw[2][kk];
      else
        gradient[k] << s.dw[0][i] * s.w[1][j], s.w[0][i] * s.dw[1][j];
      ++k;
    });
    pairs_.add(node, offset, gradient, C);
    for (int r = 0; r < S; ++r) {
      Real* diagonal = pairs_.diagonal(node[r]);
      for (int a = 0; a < D; ++a) diagonal[a * D + a] += weight[r] * mass;
    }
  }

  // The pair table of one window, projected (P_r K_rq P_q), one block row per window node; the
  // table is left zero for the next window.
  void insert_pairs(::Mat A, const PetscInt* index, const int* projector) {
    constexpr int O = Pairs::O;
    PetscInt cols[O];
    Real row_values[D * O * D];
    const std::size_t W = static_cast<std::size_t>(window_nodes_);
    for (std::size_t w = 0; w < W; ++w) {
      int count = 0;
      const PetscInt row = index[w];
      const Mat Pw = window_matrix(projector[w]);
      for (int o = 0; o < O; ++o) {
        if (!pairs_.take(w, o)) continue;
        Real* pair = pairs_.block(w, o);
        const std::size_t q = Pairs::neighbour(w, o, std::ptrdiff_t(extent_), std::ptrdiff_t(extent_));
        const Mat block = Pw * Mat(Eigen::Map<const RowMat>(pair)) * window_matrix(projector[q]);
        std::fill(pair, pair + DD, 0.0);
        if (index[q] < 0 || row < 0) continue;
        cols[count] = index[q];
        for (int a = 0; a < D; ++a)
          for (int t = 0; t < D; ++t) row_values[(a * O + count) * D + t] = block(a, t);
        ++count;
      }
      if (count == 0) continue;
      // row_values was filled with stride O per row: compact to stride `count`.
      for (int a = 1; a < D; ++a) std::copy_n(row_values + a * O * D, count * D, row_values + a * count * D);
      add_row(A, row, count, cols, row_values);
    }
  }

  // A block row of the coarse matrix: added now if this rank owns it, else kept for its owner.
  // PETSc's own stash would sum the rows that several ranks send in the order the messages
  // arrive, and the run would not repeat itself bit for bit on 3 or more ranks.
  void add_row(::Mat A, PetscInt row, int count, const PetscInt* cols, const Real* values) {
    if (row >= first_ && row < first_ + owned_nodes()) {
      petsc_call(MatSetValuesBlocked(A, 1, &row, count, cols, values, ADD_VALUES), "MatSetValuesBlocked");
      return;
    }
    const int owner = static_cast<int>(std::upper_bound(owner_first_.begin(), owner_first_.end(), row) -
                                       owner_first_.begin()) -
                      1;
    Bytes& out = outgoing_[owner];
    put(out, row), put(out, count);
    for (int c = 0; c < count; ++c) put(out, cols[c]);
    for (int v = 0; v < count * DD; ++v) put(out, values[v]);
  }

  // The rows kept for other ranks, added by their owners in the order of the sending ranks.
  void send_rows(::Mat A) {
    std::vector<Message> received = exchange_.discover(outgoing_);
    outgoing_.clear();
    std::vector<PetscInt> cols;
    std::vector<Real> values;
    for (const Message& m : received) {
      ByteReader in(m.bytes);
      while (!in.done()) {
        const PetscInt row = in.get<PetscInt>();
        const int count = in.get<int>();
        cols.resize(count), values.resize(std::size_t(count) * DD);
        for (PetscInt& c : cols) c = in.get<PetscInt>();
        for (Real& v : values) v = in.get<Real>();
        petsc_call(MatSetValuesBlocked(A, 1, &row, count, cols.data(), values.data(), ADD_VALUES),
                   "MatSetValuesBlocked");
      }
    }
  }

  Mat window_matrix(int index) const { return index < 0 ? Mat::Identity() : projectors_[index]; }

  // The first coarse number of the block of key `key` (−1: no grid block there).
  PetscInt block_base(BlockKey key) const {
    const long slot = space_->ghost().grid_slot(key);
    if (slot >= 0) return grid_first_ + static_cast<PetscInt>(slot) * nodes_per_block_;
    const auto it = remote_base_.find(key);
    return it == remote_base_.end() ? -1 : it->second;
  }

  PetscInt coarse_index(const std::int64_t* I) const {
    BlockCoord c{0, 0, 0};
    int local = 0, stride = 1;
    for (int a = 0; a < D; ++a, stride *= half_) {
      c[a] = static_cast<std::int32_t>(floor_div(I[a], half_));
      local += stride * static_cast<int>(I[a] - std::int64_t(c[a]) * half_);
    }
    const PetscInt base = block_base(encode_block_key(c));
    return base < 0 ? -1 : base + local;
  }

  void coarse_position(const std::int64_t* I, Real* x) const {
    for (int a = 0; a < 3; ++a)
      x[a] = a < D ? coarse_geometry_.origin[a] + Real(I[a]) * coarse_geometry_.dx : 0;
  }

  void owned_coords(PetscInt n, std::int64_t* I) const {
    const std::size_t slot = owned_[n] / nodes_per_block_;
    const BlockCoord cb = decode_block_key(space_->ghost().grid_keys()[slot]);
    const int node = static_cast<int>(owned_[n] % nodes_per_block_);
    const int local[3] = {node % half_, (node / half_) % half_, node / (half_ * half_)};
    for (int a = 0; a < 3; ++a) I[a] = a < D ? std::int64_t(cb[a]) * half_ + local[a] : 0;
  }

  Mat owned_projector(PetscInt n) const {
    std::int64_t I[3];
    owned_coords(n, I);
    Real x[3];
    coarse_position(I, x);
    return fine_.constraint(x);
  }

  // Asks the owners of the blocks next to this rank's particle blocks (whose coarse nodes the
  // particles' cells reach) and next to its grid blocks (whose coarse nodes interpolate to its
  // fine nodes) for their first coarse numbers.
  void learn_remote_bases() {
    remote_base_.clear();
    const GhostExchange& ghost = space_->ghost();
    const Partition& partition = space_->partition();
    std::map<int, std::vector<BlockKey>> asked;
    auto want = [&](const BlockCoord& c) {
      const BlockKey key = encode_block_key(c);
      if (ghost.grid_slot(key) >= 0 || remote_base_.count(key)) return;
      const int owner = partition.owner(key);
      remote_base_[key] = -1;  // also: nobody's grid block (owner == this rank)
      if (owner != space_->rank()) asked[owner].push_back(key);
    };
    for (BlockKey key : space_->blocks().keys)
      for (int k = 0; k < neighbour_count(D); ++k) want(add(decode_block_key(key), neighbour_offset(D, k)));
    for (BlockKey key : ghost.grid_keys())
      for (int k = 0; k < neighbour_count(D); ++k) want(add(decode_block_key(key), neighbour_offset(D, k)));
    std::map<int, Bytes> requests;
    std::vector<int> owners;
    for (const auto& [rank, keys] : asked) {
      Bytes& out = requests[rank];
      for (BlockKey key : keys) put(out, key);
      owners.push_back(rank);
    }
    std::map<int, Bytes> replies;
    for (const Message& m : exchange_.discover(requests)) {
      ByteReader in(m.bytes);
      Bytes& out = replies[m.rank];
      while (!in.done()) put(out, static_cast<std::int64_t>(block_base(in.get<BlockKey>())));
    }
    for (const Message& m : exchange_.exchange(replies, owners)) {
      ByteReader in(m.bytes);
      for (BlockKey key : asked.at(m.rank)) remote_base_[key] = static_cast<PetscInt>(in.get<std::int64_t>());
    }
  }

  // Per particle block: the coarse number (of the grid numbering) and projector of each node of
  // its coarse window; `referenced` gets the nodes the block's occupied cells reach.
  void build_windows(std::vector<PetscInt>& referenced) {
    const ParticleBlocks& blocks = space_->blocks();
    const BlockGeometry& g = space_->geometry();
    const Real* x = space_->particles().positions();
    const std::size_t W = static_cast<std::size_t>(window_nodes_);
    window_index_.assign(blocks.count() * W, -1);
    window_projector_.assign(blocks.count() * W, -1);
    projectors_.clear();
    std::vector<char> reached(W);
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      std::fill(reached.begin(), reached.end(), 0);
      for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
        Real centre[3] = {0, 0, 0};
        for (int a = 0; a < D; ++a) centre[a] = g.origin[a] + (Real(g.cell(x + D * p, a)) + 0.5) * g.dx;
        Kernels::for_each_node(extent_, extent_, Kernels::stencil(coarse_geometry_, cb, centre),
                               [&](std::size_t w, int, int, int) { reached[w] = 1; });
      }
      for (std::size_t w = 0; w < W; ++w) {
        if (!reached[w]) continue;
        const int local[3] = {static_cast<int>(w % extent_), static_cast<int>((w / extent_) % extent_),
                              static_cast<int>(w / (extent_ * extent_))};
        std::int64_t I[3] = {0, 0, 0};
        for (int a = 0; a < D; ++a)
          I[a] = std::int64_t(cb[a]) * half_ - GhostExchange::kWindowLower + local[a];
        const PetscInt index = coarse_index(I);
        window_index_[b * W + w] = index;
        if (index >= 0) referenced.push_back(index);
        Real position[3];
        coarse_position(I, position);
        const Mat P = fine_.constraint(position);
        if (!P.isIdentity(0)) {
          window_projector_[b * W + w] = static_cast<int>(projectors_.size());
          projectors_.push_back(P);
        }
      }
    }
  }

  // Per owned fine node: the coarse nodes it interpolates from (grid numbering) and the blocks
  // w P_fine P_coarse, w linear per axis: an even fine node is a coarse node, an odd one takes the
  // mean of its two neighbours.
  void build_interpolation(std::vector<PetscInt>& referenced) {
    const GhostExchange& ghost = space_->ghost();
    const int B = space_->geometry().block, npb = ghost.nodes_per_block();
    constexpr int C = kInterpolants;
    const PetscInt n = fine_.dofs->owned_nodes();
    interpolants_.assign(static_cast<std::size_t>(n) * C, Interpolant{});
    interpolation_count_.assign(static_cast<std::size_t>(n), 0);
    for (PetscInt l = 0; l < n; ++l) {
      const std::size_t i = fine_.dofs->node(l);
      const BlockCoord cb = decode_block_key(ghost.grid_keys()[i / npb]);
      const int node = static_cast<int>(i % npb), local[3] = {node % B, (node / B) % B, node / (B * B)};
      const Mat Pf = fine_.projector(l);
      for (int corner = 0; corner < C; ++corner) {
        std::int64_t I[3] = {0, 0, 0};
        Real w = 1;
        bool used = true;
        for (int a = 0; a < D; ++a) {
          const std::int64_t G = std::int64_t(cb[a]) * B + local[a];
          const int up = (corner >> a) & 1;
          if (G % 2 == 0) {
            used = used && up == 0;  // a coarse node itself: one corner on this axis
            I[a] = G / 2;
          } else {
            I[a] = (G - 1) / 2 + up;
            w *= 0.5;
          }
        }
        const PetscInt column = used ? coarse_index(I) : -1;
        if (column < 0) continue;
        Real position[3];
        coarse_position(I, position);
        interpolants_[C * l + interpolation_count_[l]++] = {column, w * Pf * fine_.constraint(position)};
        referenced.push_back(column);
      }
    }
  }

  // The coarse unknowns are the nodes something reaches (PCMG tells interpolation from
  // restriction by the shapes, so the coarse level must be the smaller): renumbers them and
  // translates the windows and interpolants. Collective.
  void keep_referenced(std::vector<PetscInt>& referenced) {
    std::sort(referenced.begin(), referenced.end());
    referenced.erase(std::unique(referenced.begin(), referenced.end()), referenced.end());
    MPI_Comm comm = space_->comm();
    const PetscInt grid_nodes = static_cast<PetscInt>(space_->ghost().grid_blocks()) * nodes_per_block_;
    ::Vec number = nullptr, gathered = nullptr;
    petsc_call(VecCreateMPI(comm, grid_nodes, PETSC_DETERMINE, &number), "VecCreateMPI");
    const std::vector<PetscScalar> ones(referenced.size(), 1.0);
    petsc_call(VecSetValues(number, static_cast<PetscInt>(referenced.size()), referenced.data(), ones.data(),
                            ADD_VALUES),
               "VecSetValues");
    petsc_call(VecAssemblyBegin(number), "VecAssemblyBegin");
    petsc_call(VecAssemblyEnd(number), "VecAssemblyEnd");
    PetscScalar* value = nullptr;
    petsc_call(VecGetArray(number, &value), "VecGetArray");
    owned_.clear();
    for (PetscInt i = 0; i < grid_nodes; ++i)
      if (value[i] > 0) owned_.push_back(static_cast<std::size_t>(i));
    long long count = static_cast<long long>(owned_.size()), first = 0;
    MPI_Exscan(&count, &first, 1, MPI_LONG_LONG, MPI_SUM, comm);
    first_ = space_->rank() == 0 ? 0 : static_cast<PetscInt>(first);
    owner_first_.resize(static_cast<std::size_t>(space_->ranks()));
    MPI_Allgather(&first_, 1, MPIU_INT, owner_first_.data(), 1, MPIU_INT, comm);
    std::fill(value, value + grid_nodes, -1.0);
    for (std::size_t n = 0; n < owned_.size(); ++n) value[owned_[n]] = Real(first_ + PetscInt(n));
    petsc_call(VecRestoreArray(number, &value), "VecRestoreArray");
    // Each rank reads the new numbers of the nodes it references, wherever they are owned.
    IS from = nullptr;
    VecScatter scatter = nullptr;
    const PetscInt m = static_cast<PetscInt>(referenced.size());
    petsc_call(ISCreateGeneral(PETSC_COMM_SELF, m, referenced.data(), PETSC_COPY_VALUES, &from),
               "ISCreateGeneral");
    petsc_call(VecCreateSeq(PETSC_COMM_SELF, m, &gathered), "VecCreateSeq");
    petsc_call(VecScatterCreate(number, from, gathered, nullptr, &scatter), "VecScatterCreate");
    petsc_call(VecScatterBegin(scatter, number, gathered, INSERT_VALUES, SCATTER_FORWARD), "VecScatterBegin");
    petsc_call(VecScatterEnd(scatter, number, gathered, INSERT_VALUES, SCATTER_FORWARD), "VecScatterEnd");
    const PetscScalar* renumbered = nullptr;
    petsc_call(VecGetArrayRead(gathered, &renumbered), "VecGetArrayRead");
    auto translate = [&](PetscInt& index) {
      if (index < 0) return;
      const auto at = std::lower_bound(referenced.begin(), referenced.end(), index);
      index = at == referenced.end() || *at != index
                  ? -1
                  : static_cast<PetscInt>(renumbered[at - referenced.begin()]);
    };
    for (PetscInt& index : window_index_) translate(index);
    for (Interpolant& in : interpolants_) translate(in.column);
    petsc_call(VecRestoreArrayRead(gathered, &renumbered), "VecRestoreArrayRead");
    VecScatterDestroy(&scatter), ISDestroy(&from), VecDestroy(&gathered), VecDestroy(&number);
  }

  struct Interpolant {
    PetscInt column = -1;
    Mat block = Mat::Zero();
  };

  SparseExchange exchange_;
  Space* space_ = nullptr;
  Fine fine_{};
  BlockGeometry coarse_geometry_;
  int half_ = 2, nodes_per_block_ = 8, extent_ = 5, window_nodes_ = 125;
  PetscInt grid_first_ = 0;            // the grid numbering: every even node of every grid block
  PetscInt first_ = 0;                 // the coarse unknowns: the referenced nodes
  std::vector<PetscInt> owner_first_;  // the first coarse unknown of each rank
  std::map<int, Bytes> outgoing_;      // block rows for other ranks (add_row)
  std::vector<std::size_t> owned_;     // per owned coarse unknown: its node in the grid numbering
  std::vector<Interpolant, Eigen::aligned_allocator<Interpolant>> interpolants_;  // [fine node][≤ 2^D]
  std::vector<unsigned char> interpolation_count_;
  std::unordered_map<BlockKey, PetscInt> remote_base_;
  std::vector<PetscInt> window_index_;  // [particle block][coarse window node]
  std::vector<int> window_projector_;   // ... index into projectors_, −1: free
  std::vector<Mat, Eigen::aligned_allocator<Mat>> projectors_;
  std::vector<Real> cell_tangent_, cell_mass_;
  std::vector<char> occupied_;
  Pairs pairs_;  // a window's summed blocks per node pair
};

}  // namespace nendo
