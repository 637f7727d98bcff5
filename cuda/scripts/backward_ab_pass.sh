# Sourced by the backward sessions (after session_preamble.sh).
#   check_while_old_builds COMMIT   cuda-check of fa2_bwd_tc (the build at hand) into $out/check.txt while COMMIT's
#                                   fa-validate builds (build_commit, /tmp/old_tree/build-gpu)
#   ab_pass NAME BUILD_DIR          times fa2_bwd_tc of that build in the FA2 paper's setting
# (fp16, batch x N = 16k tokens, hidden 2048), d = 64 and 128, N = 2048 and 8192, causal and not; each into
# $out/bwd_NAME_dD_NN.json, the output into $out/bwd_NAME.txt. Sessions run it old, new, old, new, so that drift of the
# card's clock over the minutes shows as the difference between the two rounds.
ab_pass() {
  local name=$1 dir=$2 d N
  for d in 64 128; do
    for N in 2048 8192; do
      log "bwd $name d=$d N=$N"
      timeout 100 "$dir/cuda/validate/fa-validate" --pass bwd --algo fa2_bwd_tc --dtype fp16 --d "$d" --N "$N" \
        --batch $((16384 / N)) --heads $((2048 / d)) --runs 5 --warmup 1 --sample-rows 4 --causal both \
        --out "$out/bwd_${name}_d${d}_N${N}.json" >>"$out/bwd_$name.txt" 2>&1
    done
  done
}
check_while_old_builds() {
  local old=$1 check_pid
  log "cuda-check fa2_bwd_tc (while $old builds)"
  (timeout 240 "$build/cuda/cuda-check" --quiet --algo fa2_bwd_tc >"$out/check.txt" 2>&1
  echo "exit $?" >>"$out/check.txt") &
  check_pid=$!
  BUILD_JOBS=12 build_commit "$old" fa-validate
  log "built $old"
  wait "$check_pid"
  log "cuda-check done"
  tail -3 "$out/check.txt"
}
