#include "app/Plan.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "app/OutputView.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "methods/Method.hpp"

namespace nendo {
namespace {

const MethodCost& cost_of(const std::string& method) {
  const MethodCost* cost = find_method_cost(method);
  if (!cost) throw InputError("method '" + method + "' has no cost model (methods/MethodCost.hpp)");
  return *cost;
}

// Bytes per particle of a file holding `names` of `particles` (id and position first).
double row_bytes(const ParticleSet& particles, const std::vector<std::string>& names, bool single) {
  double bytes = 0;
  for (const ParticleField& f : particles.fields()) {
    const bool listed = f.name() == "id" || f.name() == "position" ||
                        std::find(names.begin(), names.end(), f.name()) != names.end();
    if (!listed) continue;
    const bool halved = single && f.type() == FieldType::Real;
    bytes += double(f.bytes_per_particle()) / (halved ? 2 : 1);
  }
  return bytes;
}

// One output file: id, position and the output fields of every particle, and a mesh method's
// tets (4 corners of 8 bytes). One checkpoint: every field at full precision.
void file_sizes(const Scene& scene, JobPlan& plan) {
  const std::unique_ptr<Method> method = make_method(scene);
  const ParticleSet particles = make_particles(*method, scene.dimension);
  const OutputFields fields =
      select_output_fields(scene.output.fields, scene, *method, particles, 0, "output", true);
  const bool single = scene.output.precision == "single";
  double per_particle = row_bytes(particles, fields.stored, single);
  for (const std::string& name : fields.derived) {
    const bool index = name == "rank" || name == "material";
    per_particle += index ? 4 : double(method->derived_field_components(name)) * (single ? 4 : 8);
  }
  std::vector<std::string> all;
  for (const ParticleField& f : particles.fields()) all.push_back(f.name());
  const double particles_n = double(plan.size.particles);
  plan.output_bytes = particles_n * per_particle + double(plan.size.output_tets) * 32;
  plan.checkpoint_bytes = particles_n * row_bytes(particles, all, false);
}

double work_per_step(const MethodCost& cost, const Scene& scene) {
  return cost.work_per_step ? cost.work_per_step(scene) : 1.0;
}

// A line of /proc/meminfo in bytes ("MemAvailable:   123 kB"); 0 if absent.
double meminfo(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name, unit;
  double value = 0;
  while (in >> name >> value) {
    std::getline(in, unit);
    if (name == key + ":") return value * 1024;
  }
  return 0;
}

// The first number of a file ("max" and unreadable files: infinity).
double number_in(const std::string& path) {
  std::ifstream in(path);
  double value = 0;
  if (in >> value) return value;
  return std::numeric_limits<double>::infinity();
}

// What this node can still give: MemAvailable, and under a cgroup limit (v2, else v1) at most the
// limit less the group's use.
double node_available() {
  double available = meminfo("MemAvailable");
  for (const auto& [limit, usage] :
       {std::pair<const char*, const char*>{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const double cap = number_in(limit), used = number_in(usage);
    if (std::isfinite(cap) && std::isfinite(used) && cap < 1e18) {
      available = std::min(available, std::max(0.0, cap - used));
      break;
    }
  }
  return available;
}

double own_resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024;
  return 0;
}

std::string format_seconds(double seconds) {
  if (seconds < 1) return fmt::format("{:.3g} ms", seconds * 1e3);
  if (seconds < 120) return fmt::format("{:.3g} s", seconds);
  if (seconds < 7200) return fmt::format("{:.3g} min", seconds / 60);
  return fmt::format("{:.3g} h", seconds / 3600);
}

std::string fit_advice(const JobPlan& plan, const RankMemory& memory) {
  const int fewest = smallest_fitting_ranks(cost_of(plan.method), plan.size, memory);
  if (fewest == 0) return "no rank count fits it in that memory per rank";
  return fmt::format("the smallest rank count that fits is {} (an estimated {} per rank there)", fewest,
                     format_bytes(bytes_per_rank(cost_of(plan.method), plan.size, fewest)));
}

}  // namespace

double bytes_per_rank(const MethodCost& cost, const ProblemSize& size, int ranks) {
  const double particles = double(size.particles), tets = double(size.tets);
  const auto bytes = [&](const MemoryCost& c) { return c.per_particle * particles + c.per_tet * tets; };
  return cost.baseline_bytes + bytes(cost.replicated) +
         (bytes(cost.distributed) + (ranks > 1 ? bytes(cost.exchange) : 0.0)) / ranks;
}

int smallest_fitting_ranks(const MethodCost& cost, const ProblemSize& size, const RankMemory& memory) {
  const auto fits = [&](int ranks) { return bytes_per_rank(cost, size, ranks) <= memory.bytes(ranks); };
  constexpr int kMost = 1 << 24;
  if (!fits(kMost)) return 0;
  // Fitting is monotone in the rank count once the memory per rank stops falling (a node
  // full of ranks); below that, a few ranks are tried one by one.
  for (int ranks = 1; ranks <= 256; ++ranks)
    if (fits(ranks)) return ranks;
  int lo = 257, hi = kMost;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    fits(mid) ? hi = mid : lo = mid + 1;
  }
  return lo;
}

JobPlan plan_job(const Scene& scene, int ranks) {
  const MethodCost& cost = cost_of(scene.method);
  JobPlan plan;
  plan.method = scene.method, plan.ranks = ranks;
  plan.size = cost.size(scene);
  plan.bytes_per_rank = bytes_per_rank(cost, plan.size, ranks);
  plan.baseline_bytes = cost.baseline_bytes;
  file_sizes(scene, plan);
  plan.step_seconds = double(plan.size.particles) * work_per_step(cost, scene) / (cost.rate * ranks);
  if (scene.time.dt && !scene.time.cfl)
    plan.steps = std::lround(std::ceil(scene.time.end / *scene.time.dt - 1e-9));
  return plan;
}

double parse_bytes(const std::string& text) {
  std::istringstream in(text);
  double value = 0;
  std::string unit;
  if (!(in >> value) || value <= 0) throw InputError(text + ": not a size (e.g. 2GiB, 1.5GB, 800M)");
  in >> unit;
  std::string rest;
  if (in >> rest) throw InputError(text + ": not a size (e.g. 2GiB, 1.5GB, 800M)");
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  const bool binary = !unit.empty() && unit.back() == 'i';
  if (binary) unit.pop_back();
  const std::string prefixes = "kmgtp";
  if (unit.size() > 1 || (unit.size() == 1 && prefixes.find(unit[0]) == std::string::npos))
    throw InputError(text + ": unknown unit (B, K, M, G, T with an optional i and B: 2GiB, 1.5GB)");
  const double base = binary || unit.empty() ? 1024 : 1000;
  return value * (unit.empty() ? 1 : std::pow(base, double(prefixes.find(unit[0]) + 1)));
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) bytes /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.3g} {}", bytes, units[u]);
}

RankMemory planned_memory(std::optional<double> given) {
  if (given) return {[b = *given](int) { return b; }, "--memory-per-rank"};
  const double available = node_available();
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return {[available, cores](int ranks) { return available / std::min(ranks, cores); },
          fmt::format("this machine's available {} shared by up to {} ranks, one per core",
                      format_bytes(available), cores)};
}

RankMemory job_memory(MPI_Comm comm, std::optional<double> given) {
  if (given) return {[b = *given](int) { return b; }, "--memory-per-rank"};
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  const int on_node = mpi::size(node);
  double available = mpi::rank(node) == 0 ? node_available() : 0;
  MPI_Bcast(&available, 1, MPI_DOUBLE, 0, node);
  MPI_Comm_free(&node);
  double mine = available / on_node + own_resident_bytes(), least = 0;
  MPI_Allreduce(&mine, &least, 1, MPI_DOUBLE, MPI_MIN, comm);
  return {[least](int) { return least; },
          fmt::format("the node's available memory over its {} ranks, the least over nodes", on_node)};
}

void print_plan(const JobPlan& plan, const RankMemory& memory) {
  const ProblemSize& s = plan.size;
  fmt::print("method {} on {} ranks\n", plan.method, plan.ranks);
  fmt::print("  {:<18} {}{}\n", s.what, s.particles, s.detail.empty() ? "" : " (" + s.detail + ")");
  if (s.tets > 0) fmt::print("  {:<18} {}\n", "tets", s.tets);
  if (!s.estimated.empty()) fmt::print("  estimate: {}\n", s.estimated);
  fmt::print("  {:<18} {} (a process before any particle {}, the problem {})\n", "memory per rank",
             format_bytes(plan.bytes_per_rank), format_bytes(plan.baseline_bytes),
             format_bytes(plan.bytes_per_rank - plan.baseline_bytes));
  fmt::print("  {:<18} {}\n", "one output", format_bytes(plan.output_bytes));
  fmt::print("  {:<18} {}\n", "one checkpoint", format_bytes(plan.checkpoint_bytes));
  fmt::print("  {:<18} {}", "step time", format_seconds(plan.step_seconds));
  if (plan.steps)
    fmt::print(", {} steps to time.end: {}", *plan.steps,
               format_seconds(plan.step_seconds * double(*plan.steps)));
  fmt::print(" (one rank per core; {})\n", cost_of(plan.method).rate_source);
  const double have = memory.bytes(plan.ranks);
  fmt::print("  {:<18} {} ({})\n", "memory available", format_bytes(have), memory.source);
  fmt::print("{} on {} ranks; {}\n", plan.bytes_per_rank <= have ? "fits" : "does NOT fit", plan.ranks,
             fit_advice(plan, memory));
}

void refuse_unfit_job(MPI_Comm comm, const Scene& scene, std::optional<double> memory_per_rank) {
  const MethodCost* cost = find_method_cost(scene.method);
  if (!cost) return;
  const RankMemory memory = job_memory(comm, memory_per_rank);
  std::string refusal;
  if (mpi::rank(comm) == 0) try {
      const int ranks = mpi::size(comm);
      const ProblemSize size = cost->size(scene);
      const double need = bytes_per_rank(*cost, size, ranks);
      if (need > memory.bytes(ranks)) {
        JobPlan plan;
        plan.method = scene.method, plan.size = size;
        refusal = fmt::format(
            "the scene does not fit: {} {} of method {} need an estimated {} per rank on {} ranks, the ranks "
            "have {} ({}); {} (nendo plan {} --ranks N prints the estimate)",
            size.particles, size.what, scene.method, format_bytes(need), ranks,
            format_bytes(memory.bytes(ranks)), memory.source, fit_advice(plan, memory), scene.source_path);
      }
    } catch (const std::exception&) {
      // A body the estimate cannot count (an unreadable file) is reported by the set-up.
    }
  mpi::broadcast(refusal, 0, comm);
  if (!refusal.empty()) throw InputError(refusal);
}

}  // namespace nendo
