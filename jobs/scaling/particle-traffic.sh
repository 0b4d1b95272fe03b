#!/bin/bash
# Issue 34 item 7: what a step of powder PBD and slave SPH sends on 2 ranks (NENDO=path/to/nendo to choose the binary); run from the top of the repository.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1 OMPI_MCA_mpi_yield_when_idle=1
N=${NENDO:-build/src/app/nendo}
PBD=(jobs/scenes/pbd_powder/large-pour.yaml --set 'emitters=[]' --set output.every=100 --overwrite)
SPH=(jobs/bench/slave_sph/cube.yaml --set "bodies.0.min=[0,0,0]" --overwrite)
for st in 2 4; do echo "== pbd bar 1.28x0.16x0.16 np2 frames $st"; mpirun -np 2 $N run "${PBD[@]}" --set 'bodies=[{shape: box, min: [0, 0, 0], max: [1.28, 0.16, 0.16], material: powder}]' --steps $st --output /tmp/tr/pbdbar$st 2>&1 | grep -E "per step and rank|steps took"; done
echo "== pbd block 0.5x0.25x0.125 np2 frames 2"; mpirun -np 2 $N run "${PBD[@]}" --set 'bodies=[{shape: box, min: [0, 0, 0], max: [0.5, 0.25, 0.125], material: powder}]' --steps 2 --output /tmp/tr/pbdblock 2>&1 | grep -E "per step and rank|steps took"
for st in 5 10; do echo "== sph bar 0.96x0.12x0.12 np2 steps $st"; mpirun -np 2 $N run "${SPH[@]}" --set "bodies.0.max=[0.96,0.12,0.12]" --steps $st --output /tmp/tr/sphbar$st 2>&1 | grep -E "per step and rank|steps took"; done
echo "== sph cube 0.32 np2 steps 5"; mpirun -np 2 $N run "${SPH[@]}" --set "bodies.0.max=[0.32,0.32,0.32]" --steps 5 --output /tmp/tr/sphcube 2>&1 | grep -E "per step and rank|steps took"
