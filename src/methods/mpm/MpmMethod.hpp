#pragma once
// MPM as a method (spec 002): explicit (ExplicitStep.hpp) or implicit (ImplicitStep.hpp) steps
// made of the transfers (Transfers.hpp), for dimension D and kernel Kernel (make_mpm picks them).
#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <memory>
#include <variant>
#include <vector>

#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"
#include "core/StageClock.hpp"
#include "methods/Method.hpp"
#include "methods/mpm/ExplicitStep.hpp"
#include "methods/mpm/ImplicitStep.hpp"
#include "methods/mpm/MpmModel.hpp"
#include "methods/mpm/Transfers.hpp"

namespace nendo {

template <int D, class Kernel>
class MpmMethod final : public Method {
  using Mat = Eigen::Matrix<Real, D, D>;
  using MatMap = Eigen::Map<Eigen::Matrix<Real, D, D, Eigen::RowMajor>>;
  using Model = MpmModel<D>;

 public:
  explicit MpmMethod(const Scene& scene) : model_(scene), transfers_(model_) {
    if (model_.implicit) implicit_ = std::make_unique<ImplicitStep<D, Kernel>>(model_, transfers_);
  }

  void register_fields(ParticleSet& particles) const override {
    particles.add_field("B", FieldType::Real, D * D);  // APIC affine matrix (spec 002 §6.1)
    particles.add_field("F", FieldType::Real, D * D);  // deformation gradient (elastic part F_E), row-major
    // Mass is ρ V⁰ of the particle's material; the material index and J_P (spec 002 §3) are carried
    // only when they vary: several materials, a plastic one.
    if (model_.materials.size() > 1) particles.add_field("material", FieldType::Int32, 1);
    if (model_.plastic) particles.add_field("Jp", FieldType::Real, 1);
    // The rate term's Kirchhoff stress from the last velocity gradient (a viscous fluid's J η (L + Lᵀ)):
    // only with a material that has one. Checkpoints carry it under this name.
    if (model_.rate_term) particles.add_field("tau_viscous", FieldType::Real, D * D);
    // The elastic Hencky strain log V_E after the last return mapping (Drucker–Prager: the next
    // step's stress without a second SVD; Materials.hpp CarriesHencky). Zero for F = I.
    if (model_.hencky) particles.add_field("hencky_strain", FieldType::Real, D * D);
  }

  void advance(Space& space, Real t, Real dt) override {
    ++step_;
    if (!implicit_) return explicit_step(space, t, dt, step_, model_, transfers_, clock_);
    try {
      implicit_->advance(space, t, dt, step_, clock_);
    } catch (const SolverError& e) {  // a step not taken is not counted: the checkpoint saves step_
      if (!(e.reached() > t)) --step_;
      throw;
    }
  }

  bool checks_finite_state() const override { return true; }  // every G2P value (Transfers::check_finite)
  std::vector<StageTime> stage_times() const override { return clock_.times(); }
  const SolverStats* solver_stats() const override { return implicit_ ? &implicit_->stats() : nullptr; }

  // "stress": the Cauchy stress σ = τ / J (d×d, row-major); "J": det F_E · J_P, the volume ratio;
  // "Jp" and "mass" when the particles do not carry them (elastic scenes; always).
  int derived_field_components(const std::string& name) const override {
    return name == "stress" ? D * D : name == "J" || name == "Jp" || name == "mass" ? 1 : 0;
  }

  void initialize(Space& space) override {
    ParticleSet& ps = space.particles();
    Real* F = ps.real("F");
    for (std::size_t p = 0; p < ps.size(); ++p) MatMap(F + D * D * p).setIdentity();
    if (ps.has_field("Jp")) std::fill_n(ps.real("Jp"), ps.size(), 1.0);
    if (ps.has_field("tau_viscous")) std::fill_n(ps.real("tau_viscous"), ps.size() * D * D, 0.0);
    if (ps.has_field("hencky_strain")) std::fill_n(ps.real("hencky_strain"), ps.size() * D * D, 0.0);
  }

  // The grid is rebuilt every step and the particle fields hold the rest; only the step counter
  // (for messages) is kept here.
  StateRecord save_state() const override {
    StateRecord state;
    state.integers["step"] = {step_};
    return state;
  }
  void restore(Space& /*space*/, const StateRecord& state) override {
    const auto step = state.integers.find("step");
    if (step != state.integers.end() && step->second.size() == 1) step_ = step->second[0];
  }

  // spec 002 §9.3: Δt_elastic = C h / max_p c_p with the hardened dilatational wave speed (the
  // driver adds the advective bound C h / max_p |v_p|).
  Real stable_dt(const Space& space) const override {
    if (model_.cfl <= 0 || model_.implicit) return std::numeric_limits<Real>::infinity();
    const Real c = max_signal_speed(space, false);
    return c > 0 ? model_.cfl * space.geometry().dx / c : std::numeric_limits<Real>::infinity();
  }

  // The explicit step is unstable past h / max_p (c_p + |v_p|) (Courant number 1).
  Real step_limit(const Space& space) const override {
    if (model_.implicit) return std::numeric_limits<Real>::infinity();
    const Real c = max_signal_speed(space, true);
    return c > 0 ? space.geometry().dx / c : std::numeric_limits<Real>::infinity();
  }

  void derive_field(const Space& space, const std::string& name, Real* out) const override {
    const ParticleSet& ps = space.particles();
    const typename Model::Fields f = model_.fields(ps);
    const Real* F = ps.real("F");
    for (std::size_t p = 0; p < ps.size(); ++p) {
      const Mat Fp = MatMap(const_cast<Real*>(F) + D * D * p);
      const Real J = Fp.determinant();
      if (name == "J") {
        out[p] = J * f.Jp(p);
      } else if (name == "Jp") {
        out[p] = f.Jp(p);
      } else if (name == "mass") {
        out[p] = f.mass(p);
      } else {
        const Mat tau = std::visit([&](const auto& m) { return Mat(m.template kirchhoff<D>(Fp, f.Jp(p))); },
                                   model_.materials[f.material(p)]);
        MatMap(out + D * D * p) = tau / (J * f.Jp(p));  // σ = τ / det F, F = F_E F_P (validation.md §6)
      }
    }
  }

  GlobalDiagnostics diagnostics(const Space& space) const override {
    const ParticleSet& ps = space.particles();
    const typename Model::Fields f = model_.fields(ps);
    GlobalDiagnostics g = particle_diagnostics(space, [&](std::size_t p) { return f.mass(p); });
    const Real* F = ps.real("F");
    std::vector<std::vector<Real>> energy(1, std::vector<Real>(ps.size()));
    for (std::size_t p = 0; p < ps.size(); ++p) {
      const Mat Fp = MatMap(const_cast<Real*>(F) + D * D * p);
      energy[0][p] = f.V0[p] * std::visit([&](const auto& m) { return m.template psi<D>(Fp, f.Jp(p)); },
                                          model_.materials[f.material(p)]);
    }
    g.elastic_energy = reproducible_sums(space.comm(), energy)[0];  // bitwise the same on any rank count
    return g;
  }

 private:
  // max_p c_p (the hardened dilatational wave speed), plus |v_p| with `advective`; collective.
  Real max_signal_speed(const Space& space, bool advective) const {
    const ParticleSet& ps = space.particles();
    const typename Model::Fields f = model_.fields(ps);
    const Real* v = ps.real("velocity");
    Real local = 0, c = 0;
    for (std::size_t p = 0; p < ps.size(); ++p) {
      const int m = f.material(p);
      Real speed = std::visit([&](const auto& mat) { return mat.wave_speed(model_.density[m], f.Jp(p)); },
                              model_.materials[m]);
      if (advective) {
        Real v2 = 0;
        for (int a = 0; a < D; ++a) v2 += v[D * p + a] * v[D * p + a];
        speed += std::sqrt(v2);
      }
      local = std::max(local, speed);
    }
    MPI_Allreduce(&local, &c, 1, MPI_DOUBLE, MPI_MAX, space.comm());
    return c;
  }

  Model model_;
  Transfers<D, Kernel> transfers_;
  std::unique_ptr<ImplicitStep<D, Kernel>> implicit_;
  long step_ = 0;
  StageClock clock_ = mpm_stage_clock();
};

}  // namespace nendo
