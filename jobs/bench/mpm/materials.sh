#!/usr/bin/env bash
# Explicit MPM per material (issue 29): the collision benchmark with each MPM material in turn,
# 3D (collision.yaml) and 2D (collision-2d.yaml), one rank, median of 3 each. Prints one line per
# run: dimension, material, particle-steps/s per core and ns per particle-step by stage.
#   bash jobs/bench/mpm/materials.sh [BUILD_DIR] [STEPS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
steps=${2:-50}
bench="$build/jobs/bench/nendo_mpm_bench"
# Each material at the benchmark's stiffness (E = 1 MPa, ν = 0.3; the fluid's bulk modulus is the
# solid's λ + 2μ/3), so that every run takes the same time step.
materials=(
  "fixed_corotated|{model: fixed_corotated, E: 1.0e6, nu: 0.3, density: 1000}"
  "neo_hookean|{model: neo_hookean, E: 1.0e6, nu: 0.3, density: 1000}"
  "linear|{model: linear, E: 1.0e6, nu: 0.3, density: 1000}"
  "snow|{model: snow, E: 1.0e6, nu: 0.3, density: 1000}"
  "drucker_prager|{model: drucker_prager, E: 1.0e6, nu: 0.3, density: 1000}"
  "fluid|{model: fluid, bulk: 8.33e5, density: 1000, viscosity: 0}"
  "fluid_viscous|{model: fluid, bulk: 8.33e5, density: 1000, viscosity: 1.0}"
)
for scene in collision.yaml collision-2d.yaml; do
  for entry in "${materials[@]}"; do
    name=${entry%%|*}
    material=${entry#*|}
    out=$(flock /tmp/nendo-bench.lock "$bench" "$here/$scene" --steps "$steps" --repeat 3 \
      --set "materials.jelly=$material")
    rate=$(grep -oP 'particle-steps/s: \S+ total, \K\S+' <<<"$out")
    stages=$(awk '/^(P2G|scatter_add|grid|gather|G2P|migrate) /{printf "%s %s  ", $1, $3}' <<<"$out")
    echo "$scene $name $rate per core | CPU ns per particle-step: $stages"
  done
done
