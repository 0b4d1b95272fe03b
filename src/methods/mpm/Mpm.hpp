#pragma once
// Explicit MPM (spec 002 §9): APIC (default), PIC or FLIP transfers with quadratic or cubic
// B-splines, on the spine's blocks, windows and ghost exchange. The step reads like spec §9.2;
// the dimension and the kernel are template parameters of the stepper (MpmStep.hpp).
#include <memory>

#include "methods/Method.hpp"

namespace nendo {

// One explicit step of a given dimension and kernel; built once per run.
class MpmStepper {
 public:
  virtual ~MpmStepper() = default;
  virtual void initialize(Space& space) = 0;
  virtual StateRecord save_state() const = 0;
  virtual void restore(const StateRecord& state) = 0;
  virtual void advance(Space& space, Real t, Real dt) = 0;
  virtual Real stable_dt(const Space& space) const = 0;
  virtual Real step_limit(const Space& space) const = 0;
  virtual GlobalDiagnostics diagnostics(const Space& space) const = 0;
  virtual std::vector<StageTime> stage_times() const = 0;
  virtual void derive_field(const Space& space, const std::string& name, Real* out) const = 0;
  virtual const SolverStats* solver_stats() const = 0;
};

class Mpm final : public Method {
 public:
  explicit Mpm(const Scene& scene);
  void register_fields(ParticleSet& particles) const override;
  void initialize(Space& space) override { stepper_->initialize(space); }
  StateRecord save_state() const override { return stepper_->save_state(); }
  void restore(Space& /*space*/, const StateRecord& state) override { stepper_->restore(state); }
  Real stable_dt(const Space& space) const override { return stepper_->stable_dt(space); }
  Real step_limit(const Space& space) const override { return stepper_->step_limit(space); }
  void advance(Space& space, Real t, Real dt) override { stepper_->advance(space, t, dt); }
  bool checks_finite_state() const override { return true; }  // every G2P value (MpmStep::check_finite)
  GlobalDiagnostics diagnostics(const Space& space) const override { return stepper_->diagnostics(space); }
  std::vector<StageTime> stage_times() const override { return stepper_->stage_times(); }
  const SolverStats* solver_stats() const override { return stepper_->solver_stats(); }
  // "stress": the Cauchy stress σ = τ / J (d×d, row-major); "J": det F_E · J_P, the volume ratio;
  // "Jp" and "mass" when the particles do not carry them (elastic scenes; always).
  int derived_field_components(const std::string& name) const override {
    return name == "stress" ? dimension_ * dimension_ : name == "J" || name == "Jp" || name == "mass" ? 1 : 0;
  }
  void derive_field(const Space& space, const std::string& name, Real* out) const override {
    stepper_->derive_field(space, name, out);
  }

 private:
  int dimension_;
  bool multi_material_;
  bool plastic_;
  bool viscous_;
  std::unique_ptr<MpmStepper> stepper_;
};

}  // namespace nendo
