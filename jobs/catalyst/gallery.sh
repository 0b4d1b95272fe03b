#!/usr/bin/env bash
# Regenerates the images of docs/gallery.md: runs the example scenes (jobs/scenes/demo.yaml,
# jobs/scenes/mpm/*.yaml and a slave_sph cube) on 2 ranks under a virtual X display with the Catalyst scripts
# render.py (the images; a fixed camera per scene and the colliders, set below) and
# globals.py (the time of each image, in globals.csv), then downscales the chosen steps to
# 640 x 400 into docs/images/gallery/SCENE_NNNNNN.png (NNNNNN = step).
#
#   jobs/catalyst/gallery.sh                  # every scene (9 minutes on a busy 2-core machine)
#   jobs/catalyst/gallery.sh demo dam-break   # some scenes
#   jobs/catalyst/gallery.sh --no-run demo    # only redo the downscaling of an earlier run
#
# Runs go to ${GALLERY_WORK:-/tmp/gallery}-SCENE/ (images/view_NNNNNN.png of every call,
# globals.csv and the usual output files). Needs nendo built with Catalyst
# (build/src/app/nendo, or $NENDO), xvfb-run (Debian: xvfb) and Pillow for /usr/bin/python3
# (Debian: python3-pil). Runs are niced.
set -euo pipefail
cd "$(dirname "$0")/../.."

NENDO=${NENDO:-build/src/app/nendo}
WORK=${GALLERY_WORK:-/tmp/gallery}
IMAGES=docs/images/gallery

run=1
if [[ ${1:-} == --no-run ]]; then run=0; shift; fi
wanted=("$@")

# scene NAME FILE EVERY_STEPS STEPS(- = all) "STEPS SHOWN" "FRAME" "SHAPES" POINT_SIZE ZOOM
# FRAME, SHAPES, POINT_SIZE and ZOOM are render.py's RENDER_FRAME (the box the camera
# frames), RENDER_SHAPES (the colliders, drawn in grey), RENDER_POINT_SIZE and RENDER_ZOOM.
scene() {
  local name=$1 file=$2 every=$3 steps=$4 picks=$5 frame=$6 shapes=$7 point_size=$8 zoom=$9
  if [[ ${#wanted[@]} -gt 0 && " ${wanted[*]} " != *" $name "* ]]; then return 0; fi
  local out="$WORK-$name"
  if ((run)); then
    local limit=() attempt
    [[ $steps != - ]] && limit=(--steps "$steps")
    echo "== $name: $file, an image every $every steps"
    # A second try when the virtual display fails (VTK aborts with "bad X server connection"):
    # xvfb-run -a can race with other xvfb-runs for a display number, and an Xvfb may be ended
    # by someone else's clean-up while the run still uses it.
    for attempt in 1 2; do
      rm -rf "$out"
      if RENDER_FRAME=$frame RENDER_SHAPES=$shapes RENDER_POINT_SIZE=$point_size RENDER_ZOOM=$zoom \
        nice -n 10 xvfb-run -a -n $((100 + RANDOM % 900)) -s "-screen 0 1280x1024x24 -noreset" mpirun -np 2 "$NENDO" run "$file" \
        --catalyst jobs/catalyst/render.py --catalyst jobs/catalyst/globals.py \
        --set catalyst.every_steps="$every" "${limit[@]}" --output "$out" >"$WORK-$name.log" 2>&1; then
        break
      fi
      mv "$WORK-$name.log" "$WORK-$name.log.$attempt"
      echo "   run $attempt failed (the end of $WORK-$name.log.$attempt:)"
      grep -v '^ *[0-9]* *0x' "$WORK-$name.log.$attempt" | tail -n 5
      ((attempt < 2)) || exit 1
    done
    grep '^nendo' "$WORK-$name.log"
  fi
  # shellcheck disable=SC2086
  /usr/bin/python3 - "$out" "$IMAGES" "$name" $picks <<'EOF'
import csv, sys
from PIL import Image

out, images, name, picks = sys.argv[1], sys.argv[2], sys.argv[3], [int(s) for s in sys.argv[4:]]
times = {int(row["step"]): float(row["time"]) for row in csv.DictReader(open(f"{out}/globals.csv"))}
for step in picks:
    image = Image.open(f"{out}/images/view_{step:06d}.png").convert("RGB")
    image = image.resize((640, 400), Image.LANCZOS)
    path = f"{images}/{name}_{step:06d}.png"
    image.save(path, optimize=True)
    print(f"{path}: step {step}, t = {times[step]:.4f} s")
EOF
}

mkdir -p "$IMAGES"
scene demo jobs/scenes/demo.yaml 150 - "300 600 900" \
  "-0.15 0.9 0 0.7 0.25 0.6" "box -0.25 1 -0.01 0 0.15 0.7" 2 1.35
scene jelly-drop jobs/scenes/mpm/jelly-drop.yaml 125 - "1125 1375 1875" \
  "0.35 0.65 0 0.55 0.35 0.65" "box 0.3 0.7 -0.01 0 0.3 0.7" 3 1.1
scene jelly-drop-2d jobs/scenes/mpm/jelly-drop-2d.yaml 125 - "1125 1375 1750" \
  "0.3 0.7 -0.02 0.6 0 0" "box 0 1 -0.02 0 0 0" 8 1
scene rubber-ball jobs/scenes/mpm/rubber-ball.yaml 200 - "1000 1800 3200" \
  "0.05 0.85 0 0.48 0.05 0.25" "box 0 0.9 -0.01 0 0 0.3" 3 1.3
scene snowball jobs/scenes/mpm/snowball.yaml 400 - "0 400 4400" \
  "-0.02 0.3 0 0.34 0.06 0.34" "cylinder 0.1 0.2 0.2 0.025 0.4; box -0.05 0.35 -0.01 0 0.05 0.35" 3 1.15
scene cantilever jobs/scenes/mpm/cantilever.yaml 435 3480 "0 870 1740" \
  "-0.1 0.55 0.22 0.44 0 0" "box -0.3 0 0 0.7 0 0" 6 1
scene dam-break jobs/scenes/mpm/dam-break.yaml 400 6400 "1200 2800 6400" \
  "-0.02 0.82 -0.02 0.55 0 0" "box -0.1 0.9 -0.1 0 0 0; box -0.1 0 0 0.55 0 0; box 0.8 0.9 0 0.55 0 0" 3 1
scene sand-column jobs/scenes/mpm/sand-column.yaml 500 - "1000 2500 4500" \
  "-0.02 0.7 -0.02 0.33 0 0" "box -0.1 0.8 -0.015 0 0 0; box -0.1 0 -0.015 0.33 0 0" 4 1
# Slave SPH: masters and slaves both drawn (the slaves are the halo of points around the body).
scene slave-cube-plastic jobs/scenes/slave_sph/cube-plastic-high.yaml 50 400 "0 150 400" \
  "-0.06 0.22 0 0.28 -0.06 0.22" "box -0.1 0.26 -0.01 0 -0.1 0.26" 3 1.1
