#!/usr/bin/env bash
# One device call: fa-calibrate on the GPU at hand, which now writes the FA2 backward step's issue rates
# (model.fa2_bwd_step_issue_d64/_d128, from peak-rates --backward-step's probe) into the GPU file; and fa2_bwd_tc as
# it is, checked against fp64 (cuda-check) and timed beside the build of commit OLD, old, new, old, new.
#   OLD=1d8de9e bash cuda/scripts/backward_calibrate_session.sh     (from the repository root, on the GPU machine)
set -uo pipefail
old=${OLD:?the commit to compare with}
source "$(dirname "$0")/session_preamble.sh" fa-calibrate cuda-check fa-validate
source "$(dirname "$0")/backward_ab_pass.sh"
check_while_old_builds "$old"
log "fa-calibrate --raw"
step 300 calibrate "${into[@]}" "$out/calibrate.txt" "$build/cuda/fa-calibrate" --out "$out/calibrated-gpu.json" \
  --raw "$out/calibrate_raw.json"
tail -8 "$out/calibrate.txt"
python3 -c "import json, sys; m = json.load(open(sys.argv[1]))['model']; print({k: v for k, v in m.items() if 'step' in k})" \
  "$out/calibrated-gpu.json"
ab_pass old /tmp/old_tree/build-gpu
ab_pass new "$build"
ab_pass old2 /tmp/old_tree/build-gpu
ab_pass new2 "$build"
log "done"
