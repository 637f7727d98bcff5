#!/usr/bin/env bash
# One device call: fa-calibrate on the GPU at hand, with --raw (every probe, the FA2 step's cycles at 1 to 4
# warps per scheduler among them), and the GPU file it writes. docs/calibrate.md says what each number is.
#
#   bash cuda/scripts/calibrate_session.sh     (from the repository root, on the GPU machine)
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" fa-calibrate
log "fa-calibrate --raw"
step 300 calibrate "${into[@]}" "$out/calibrate.txt" "$build/cuda/fa-calibrate" --out "$out/calibrated-gpu.json" \
  --raw "$out/calibrate_raw.json"
tail -5 "$out/calibrate.txt"
python3 -c "import json, sys; print(json.dumps(json.load(open(sys.argv[1])).get('attention_step'), indent=1))" \
  "$out/calibrate_raw.json"
log "done"
