#!/usr/bin/env bash
# Set-up for a fresh Debian bookworm machine: installs what nendo needs from Debian's archive,
# builds it, then runs the demo scene on 2 ranks or the whole test suite.
#
#   bash jobs/bootstrap.sh demo    # install, build, run jobs/scenes/demo.yaml under mpirun -np 2
#   bash jobs/bootstrap.sh test    # install, build, run every test (ctest)
#   bash jobs/bootstrap.sh build   # install and build only
#   bash jobs/bootstrap.sh without-catalyst   # CI: the build without ParaView builds and runs
#   bash jobs/bootstrap.sh fuzz    # CI: the scene loader under libFuzzer + ASan/UBSan, 60 s
#                                  # (NENDO_FUZZ_SECONDS), from the shipped scenes
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config
  openmpi-bin libopenmpi-dev libhdf5-openmpi-dev petsc-dev libeigen3-dev
  libyaml-cpp-dev libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev
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

# nendo also builds and runs without ParaView; --catalyst then stops with a clear error (exit 2).
check_without_catalyst() {
  install_packages
  local dir=build-nocatalyst out
  echo "== building without Catalyst in $dir"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNENDO_WITH_CATALYST=OFF \
    -DNENDO_BUILD_TESTS=OFF -DNENDO_BUILD_BENCHMARKS=OFF
  cmake --build "$dir" -j "$JOBS" --target nendo
  out=$(mktemp -d)
  mpirun -np 2 "$dir/src/app/nendo" run jobs/scenes/mpm/jelly-drop-2d.yaml --steps 20 --output "$out/run"
  test -f "$out/run/particles_000001.h5"
  local code=0
  mpirun -np 2 "$dir/src/app/nendo" run jobs/scenes/mpm/jelly-drop-2d.yaml --steps 20 --output "$out/refused" \
    --catalyst jobs/catalyst/extracts.py >"$out/log" 2>&1 || code=$?
  grep -q "built without ParaView Catalyst" "$out/log" && [ "$code" -eq 2 ] ||
    { cat "$out/log"; echo "== expected exit 2 and a message, got $code" >&2; exit 1; }
  rm -rf "$out"
  echo "== the build without Catalyst runs, and refuses Catalyst scripts clearly"
}

# libFuzzer on parse_scene() (tests/fuzz), seeded with every scene in jobs/ and tests/ and the
# inputs that once found a bug (tests/fuzz/regressions/). A crash, a hang (10 s), a sanitizer
# report or an exception other than SceneError fails; the input is left in build-fuzz/artifacts/.
fuzz() {
  install_packages
  local dir=build-fuzz
  echo "== building the scene fuzzer in $dir (clang, ASan, UBSan)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_CXX_COMPILER=clang++-14 -DNENDO_BUILD_FUZZERS=ON -DNENDO_BUILD_TESTS=OFF \
    -DNENDO_BUILD_BENCHMARKS=OFF -DNENDO_WITH_CATALYST=OFF
  cmake --build "$dir" -j "$JOBS" --target nendo_scene_fuzz
  rm -rf "$dir/corpus" "$dir/artifacts" && mkdir -p "$dir/corpus" "$dir/artifacts"
  find jobs tests -name '*.yaml' | while read -r f; do cp "$f" "$dir/corpus/$(echo "$f" | tr / _)"; done
  cp tests/fuzz/regressions/* "$dir/corpus/" 2>/dev/null || true
  echo "== fuzzing the scene loader for ${NENDO_FUZZ_SECONDS:-60} s from $(ls "$dir/corpus" | wc -l) inputs"
  "$dir/tests/fuzz/nendo_scene_fuzz" -max_total_time="${NENDO_FUZZ_SECONDS:-60}" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" 2>&1 | grep -v "^#\|^\"\|^INFO" || true
  if [ -n "$(ls -A "$dir/artifacts")" ]; then
    echo "== the fuzzer found inputs that break the scene loader: $dir/artifacts/" >&2
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

run_tests() {
  build
  echo "== running the test suite"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 600
}

case "${1:-}" in
  demo) demo ;;
  test) run_tests ;;
  build) build ;;
  without-catalyst) check_without_catalyst ;;
  fuzz) fuzz ;;
  *) echo "usage: bash jobs/bootstrap.sh demo|test|build|without-catalyst|fuzz" >&2; exit 2 ;;
esac
