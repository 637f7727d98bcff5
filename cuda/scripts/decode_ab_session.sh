#!/usr/bin/env bash
# One device call: FlashDecoding before and after a kernel change, timed in the same call. Builds
# fa-validate from this tree and from commit OLD (a git worktree), then times decoding at batch 1 and 8 (32 query
# heads over 32, 8 and 1 K/V heads, d = 128, fp16, 16k-128k keys) with each build in turn, old, new, old,
# new, so that drift between passes shows. Everything lands in $OUT/gpu-session.tgz.
#   OLD=50ff63c bash cuda/scripts/decode_ab_session.sh
set -uo pipefail
old=${OLD:?the commit to compare with}
source "$(dirname "$0")/session_preamble.sh" fa-validate
log "build $old"
build_commit "$old" fa-validate
pass() {  # NAME BUILD_DIR
  log "pass $1"
  "$2/cuda/validate/fa-validate" --grid decode --algo flash_decoding --batches 1,8 --kv-heads 32,8,1 \
    --Nk 16384,65536,131072 --runs 20 --sample-rows 2 --out "$out/$1.json" >"$out/$1.txt" 2>&1
  echo "fa-validate exit $?" >>"$out/$1.txt"
}
pass old_1 /tmp/old_tree/build-gpu
pass new_1 "$build"
pass old_2 /tmp/old_tree/build-gpu
pass new_2 "$build"
log "done"
tail -n +2 "$out"/new_2.txt
