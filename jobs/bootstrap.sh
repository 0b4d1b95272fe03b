#!/usr/bin/env bash
# Set-up for a fresh Debian bookworm machine: installs what nendo needs from Debian's archive,
# builds it, then runs the demo scene on 2 ranks or the whole test suite.
#
#   bash jobs/bootstrap.sh demo    # install, build, run jobs/scenes/demo.yaml under mpirun -np 2
#   bash jobs/bootstrap.sh test    # install, build, run every test (ctest)
#   bash jobs/bootstrap.sh build   # install and build only
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config
  openmpi-bin libopenmpi-dev libhdf5-openmpi-dev petsc-dev libeigen3-dev
  libyaml-cpp-dev libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev
  python3 python3-h5py-mpi python3-numpy python3-matplotlib
  paraview python3-paraview
  slurm-wlm munge
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
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD_DIR" -j "$JOBS"
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
  *) echo "usage: bash jobs/bootstrap.sh demo|test|build" >&2; exit 2 ;;
esac
