#!/usr/bin/env bash
# Set-up for a fresh Debian bookworm machine: installs what nendo needs from Debian's archive,
# builds it, then runs the demo scene on 2 ranks or the whole test suite.
#
#   bash jobs/bootstrap.sh demo    # install, build, run jobs/scenes/demo.yaml under mpirun -np 2
#   bash jobs/bootstrap.sh test    # install, build, run every test (ctest)
#   bash jobs/bootstrap.sh ci      # what .ci/run does: `test`, then `sanitize`, overlapped
#   bash jobs/bootstrap.sh build   # install and build only
#   bash jobs/bootstrap.sh install # install only
#   bash jobs/bootstrap.sh sanitize   # CI: a second build with clang, ASan + UBSan and no ParaView:
#                                     # the sanitizer suite on 1-4 ranks, a few steps of each method,
#                                     # the refusal of Catalyst scripts, and the scene fuzzer (60 s,
#                                     # NENDO_FUZZ_SECONDS core-seconds); `without-catalyst` and `fuzz` do one part;
#                                     # `sanitize-all` adds a test per method (about 15 min more);
#                                     # `sanitize-build` builds the sanitizer tree only
# docs/testing.md says how the suite is organised and how CI (.ci/run) overlaps these steps.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config
  openmpi-bin libopenmpi-dev libhdf5-openmpi-dev petsc-dev libeigen3-dev
  libyaml-cpp-dev libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev
  libgmsh-dev  # tetrahedral meshes: reading .msh files, meshing cylinders
  python3 python3-h5py-mpi python3-numpy python3-matplotlib
  # ParaView Catalyst; the -dev packages are what ParaView's CMake package config looks for, and
  # xvfb + Mesa render the images of Catalyst scripts on machines without a display.
  paraview paraview-dev python3-paraview xvfb xauth libgl1-mesa-dri
  libglew-dev libnetcdf-dev liblz4-dev libdouble-conversion-dev libutfcpp-dev
  libx11-dev libfreetype-dev libxml2-dev libboost-dev
  slurm-wlm munge
  clang-14 libclang-rt-14-dev  # the scene fuzzer (libFuzzer, ASan, UBSan)
)

# OpenMPI refuses root without these; tests run 3 and 4 ranks on small machines.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA/ptrace in containers
BUILD_DIR=${NENDO_BUILD_DIR:-build}
JOBS=$(nproc)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build() {
  install_packages
  echo "== building in $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNENDO_WITH_CATALYST=ON
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# CI's second build (build-sanitize): clang with AddressSanitizer and UndefinedBehaviorSanitizer,
# -O1 with assertions on, without ParaView. Every report stops the program that made it.
SANITIZED_DIR=build-sanitize
# LeakSanitizer is off for the MPI programs: Open MPI, PMIx and HDF5 keep allocations until exit
# in plugins whose frames no stack unwinds through; the fuzzer (no MPI) keeps it on.
export ASAN_OPTIONS=detect_leaks=0:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

build_sanitized() {
  install_packages
  echo "== building with ASan + UBSan, without Catalyst, in $SANITIZED_DIR: $*"
  cmake -S . -B "$SANITIZED_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_CXX_COMPILER=clang++-14 "-DCMAKE_C_FLAGS_RELEASE=-O1 -gline-tables-only" \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only" -DNENDO_SANITIZE=ON -DNENDO_BUILD_FUZZERS=ON \
    -DNENDO_BUILD_BENCHMARKS=OFF -DNENDO_WITH_CATALYST=OFF
  cmake --build "$SANITIZED_DIR" -j "$JOBS" --target "$@"
}

# Under ASan + UBSan: the sanitizer suite (the tests of the spine, I/O, scene loader, material
# models and guard on 1-4 ranks; with `all`, one test per method too: tests/CMakeLists.txt), and a
# few steps of one scene of each method on 2 ranks.
sanitized_tests() {
  echo "== the sanitizer suite under ASan + UBSan"
  # `timed` runs this after `||`, where `set -e` does not act: every failure returns by hand.
  ctest --test-dir "$SANITIZED_DIR" -L "sanitizer_suite${1:+|sanitizer_methods}" --output-on-failure -j "$JOBS" \
    --timeout 1200 || return 1
  local out scene
  out=$(mktemp -d)
  for scene in jobs/scenes/mpm/jelly-drop-2d.yaml jobs/scenes/mpm/stiff-drop-implicit.yaml \
    jobs/scenes/pbd_powder/pour.yaml jobs/scenes/slave_sph/cube-soft.yaml \
    jobs/scenes/shape_matching/bar-twist.yaml jobs/scenes/fem/cantilever-small.yaml \
    jobs/scenes/shape_matching/cylinder-bend.yaml; do  # the last meshes through the Gmsh plugin
    echo "== $scene, 5 steps on 2 ranks under ASan + UBSan"
    mpirun -np 2 "$SANITIZED_DIR/src/app/nendo" run "$scene" --steps 5 --output "$out/run" \
      --set checkpoint.dir="$out/checkpoints" >"$out/log" 2>&1 || { cat "$out/log"; exit 1; }
    rm -rf "$out/run" "$out/checkpoints"
  done
  rm -rf "$out"
}

# nendo also builds and runs without ParaView; --catalyst then stops with a clear error (exit 2).
check_without_catalyst() {
  local nendo=$SANITIZED_DIR/src/app/nendo out
  out=$(mktemp -d)
  mpirun -np 2 "$nendo" run jobs/scenes/mpm/jelly-drop-2d.yaml --steps 20 --output "$out/run" || return 1
  test -f "$out/run/particles_000001.h5" || return 1
  local code=0
  mpirun -np 2 "$nendo" run jobs/scenes/mpm/jelly-drop-2d.yaml --steps 20 --output "$out/refused" \
    --catalyst jobs/catalyst/extracts.py >"$out/log" 2>&1 || code=$?
  grep -q "built without ParaView Catalyst" "$out/log" && [ "$code" -eq 2 ] ||
    { cat "$out/log"; echo "== expected exit 2 and a message, got $code" >&2; exit 1; }
  rm -rf "$out"
  echo "== the build without Catalyst runs, and refuses Catalyst scripts clearly"
}

# libFuzzer on parse_scene() (tests/fuzz), seeded with every scene in jobs/ and tests/ and the
# inputs that once found a bug (tests/fuzz/regressions/). A crash, a hang (10 s), a sanitizer
# report or an exception other than SceneError fails; the input is left in $SANITIZED_DIR/artifacts/.
fuzz() {
  local dir=$SANITIZED_DIR
  rm -rf "$dir/corpus" "$dir/artifacts" && mkdir -p "$dir/corpus" "$dir/artifacts"
  find jobs tests -name '*.yaml' | while read -r f; do cp "$f" "$dir/corpus/$(echo "$f" | tr / _)"; done
  cp tests/fuzz/regressions/* "$dir/corpus/" 2>/dev/null || true
  # NENDO_FUZZ_SECONDS of one core's fuzzing, spread over every core (libFuzzer's fork mode).
  local seconds=${NENDO_FUZZ_SECONDS:-60}
  echo "== fuzzing the scene loader for $seconds core-seconds on $JOBS cores from $(ls "$dir/corpus" | wc -l) inputs"
  ASAN_OPTIONS=detect_leaks=1 "$dir/tests/fuzz/nendo_scene_fuzz" -fork="$JOBS" -max_total_time=$(((seconds + JOBS - 1) / JOBS)) \
    -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" 2>&1 | tee "$dir/fuzz.log" |
    grep -v "^\"\|^INFO" | tail -3 || true
  if [ -n "$(ls -A "$dir/artifacts")" ]; then
    echo "== the fuzzer found inputs that break the scene loader: $dir/artifacts/" >&2
    grep -E -A40 "ERROR: |SUMMARY: |deadly signal|out-of-memory|Timeout|uncaught" "$dir/fuzz.log" | head -120 >&2
    # The inputs themselves, so that a CI log alone reproduces the finding (add each to
    # tests/fuzz/regressions/ with its fix).
    for input in "$dir"/artifacts/*; do
      echo "== $(basename "$input") ($(wc -c <"$input") bytes), base64:" >&2
      head -c 8192 "$input" | base64 >&2
      echo "== the same, as text:" >&2
      head -c 2048 "$input" | cat -v >&2
      echo >&2
    done
    exit 1
  fi
  echo "== the scene fuzzer ran clean"
}

demo() {
  build
  rm -rf out/demo
  echo "== running the demo scene on 2 ranks"
  mpirun -np 2 "$BUILD_DIR/src/app/nendo" run jobs/scenes/demo.yaml --output out/demo
  echo "== done: open out/demo/particles.xdmf in ParaView (diagnostics: out/demo/diagnostics.csv)"
}

# The suite in two passes (docs/testing.md). Each test takes as many of ctest's slots as it runs
# ranks (PROCESSORS). The unit, method and validation tests compute and synchronise all the time:
# one slot per core, so that no two of them share a core. The end-to-end tests (label end_to_end)
# wait on process start-up, ParaView, Slurm and the disk for much of their time: three slots per
# core, so that a 4-rank test shares the cores with a 2-rank one, their ranks yielding the core
# while they wait (tests/CMakeLists.txt).
unit_tests() {
  echo "== running the unit, method and validation tests"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -LE end_to_end -j "$JOBS" --timeout 600
}
end_to_end_tests() {
  echo "== running the end-to-end tests"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -L end_to_end -j "$((3 * JOBS))" --timeout 900
}
run_tests() {
  build
  local rc=0
  unit_tests || rc=$?
  end_to_end_tests || rc=$?
  return $rc
}

# CI (.ci/run): the test command above, with the sanitizer tree built at the lowest priority behind
# the tests (on the cycles they leave idle; behind the main build it only slowed that build), then
# the sanitizer job. Prints the wall time of each phase.
PHASES=()
timed() {
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  PHASES+=("$(printf '%-62s %5d s' "$name" $((SECONDS - start)))")
  return $rc
}
# The sanitizer job once its tree is built; `all` adds a test per method.
sanitizer_job() {
  timed "sanitizer suite, method runs" sanitized_tests "$@"
  timed "build without Catalyst" check_without_catalyst
  timed "scene fuzzer" fuzz
}
ci() {
  timed "install (apt-get)" install_packages
  timed "build" build
  # The sanitizer build in a session of its own with its scheduling group niced: Linux shares the
  # cores between sessions before nice values count, and each mpirun of a test leads a session.
  local rc=0 log=$SANITIZED_DIR.log
  setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 bash "$0" sanitize-build' \
    "${BASH_SOURCE[0]}" >"$log" 2>&1 &
  local sanitize_build=$!
  trap "kill -- -$sanitize_build 2>/dev/null || true" EXIT
  timed "unit, method and validation tests (sanitizer build behind)" unit_tests || rc=$?
  timed "end-to-end tests" end_to_end_tests || rc=$?
  timed "rest of the sanitizer build" wait $sanitize_build || { cat "$log"; echo "== the sanitizer build failed" >&2; exit 1; }
  grep -E "warning:|error:" "$log" || true
  [ $rc -eq 0 ] || { echo "== the test suite failed" >&2; exit $rc; }
  sanitizer_job
  echo "== CI phases (wall):"
  printf '   %s\n' "${PHASES[@]}"
  printf '   %-62s %5d s\n' "total" "$SECONDS"
}

SANITIZE_TARGETS=(nendo nendo_scene_fuzz nendo_sanitizer_suite)
case "${1:-}" in
  demo) demo ;;
  test) run_tests ;;
  ci) ci ;;
  build) build ;;
  install) install_packages ;;
  sanitize-build) build_sanitized "${SANITIZE_TARGETS[@]}" ;;
  sanitize) build_sanitized "${SANITIZE_TARGETS[@]}" && sanitizer_job ;;
  sanitize-all) build_sanitized "${SANITIZE_TARGETS[@]}" nendo_sanitizer_methods && sanitizer_job all ;;
  without-catalyst) build_sanitized nendo && check_without_catalyst ;;
  fuzz) build_sanitized nendo_scene_fuzz && fuzz ;;
  *) echo "usage: bash jobs/bootstrap.sh demo|test|ci|build|install|sanitize|sanitize-build|sanitize-all|without-catalyst|fuzz" >&2
     exit 2 ;;
esac
