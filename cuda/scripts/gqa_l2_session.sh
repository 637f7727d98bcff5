#!/usr/bin/env bash
# One device call: do a group's query heads share their K/V head in L2? fa2_tc (FlashAttention-2 on the
# tensor cores, one block per query head's Q tile) with 32, 8 and 1 K/V heads over 32 query heads, beside
# FlashDecoding, timed and predicted, and its DRAM bytes read by Nsight Compute against the L2 model's
# (sim/exec/kv_head_units.hpp: the heads of one K/V head simulated together). Predictions written before
# the run: predicted_before_decode.json, predicted_before_gqa.json (predict_before.py, H200 preset).
#   validate_decode.txt/.json   fa-validate --grid decode, fa2_tc and flash_decoding, KV 32/8/1, batch 1/8/64,
#                               Nk 4k/16k/64k (median of 10 after 2 warm-ups)
#   torch_decode.txt/.json      PyTorch's SDPA backends on the same shapes
#   decode_copy.txt/.json       the card's device-to-device copy rate (the decode summaries' yardstick)
#   validate_gqa.txt/.json      fa-validate fa2_tc, B = 2, H = 32, KV 32/8/1, d = 128, fp16, N 4096 and 16384
#   ncu_dram.txt                Nsight Compute dram__bytes_read/write of one fa2_tc launch (cold L2: ncu flushes
#                               the caches before a profiled kernel), for the shapes listed in it
#   check.txt, sanitizer/       (STEPS with check, sanitize) cuda-check of fa2_tc and fa2_bwd_tc, the whole grid,
#                               and compute-sanitizer memcheck/racecheck/synccheck on its --small problems up to N = 70
# Everything lands in $OUT/gpu-session.tgz; a step cut short says so in session.log.
#   bash cuda/scripts/gqa_l2_session.sh                      (call 1: STEPS="decode gqa ncu torch")
#   STEPS="check sanitize decode gqa" DECODE_ALGOS=fa2_tc bash cuda/scripts/gqa_l2_session.sh
#                               (call 2, after fa2_tc's and fa2_bwd_tc's K/V head took one division: no spills)
#   STEPS=decode DECODE_ALGOS=fa2_tc DECODE_SHAPES="--kv-heads 32,8,1 --batches 2,4,16,32 --Nk 2048,8192,32768" \
#     bash cuda/scripts/gqa_l2_session.sh   (call 3: shapes no run had timed, for the chain bound of 0d294c9)
set -uo pipefail
STEPS=${STEPS:-"decode gqa ncu torch"}
DECODE_ALGOS=${DECODE_ALGOS:-fa2_tc,flash_decoding}
CHECK_LIMIT_S=${CHECK_LIMIT_S:-220}
wants() { [[ " $STEPS " == *" $1 "* ]]; }
source "$(dirname "$0")/session_preamble.sh" fa-validate peak-rates cuda-check
fv="$build/cuda/validate/fa-validate"
read -r -a decode_shapes <<< "${DECODE_SHAPES:---kv-heads 32,8,1 --batches 1,8,64 --Nk 4096,16384,65536}"
decode=(--grid decode "${decode_shapes[@]}")

wants check && check_kernels "$CHECK_LIMIT_S" fa2_tc fa2_bwd_tc  # grouped K/V heads included
wants sanitize && sanitize_small fa2_tc fa2_bwd_tc

log "copy bandwidth"
"$build/cuda/peak-rates" --copy > "$out/decode_copy.txt" 2>&1
"$build/cuda/peak-rates" --copy --json > "$out/decode_copy.json" 2>>"$out/decode_copy.txt"
if wants decode; then
log "fa-validate --grid decode: $DECODE_ALGOS"
step 200 validate-decode "$fv" "${decode[@]}" --algo "$DECODE_ALGOS" --runs 10 --warmup 2 --sample-rows 4 \
  --out "$out/validate_decode.json" > "$out/validate_decode.txt" 2>&1
tail -n +2 "$out/validate_decode.txt" | head -70
fi
if wants gqa; then
log "fa-validate fa2_tc, B = 2, H = 32, KV 32/8/1"
step 90 validate-gqa "$fv" --algo fa2_tc --N 4096,16384 --d 128 --dtype fp16 --batch 2 --heads 32 --kv-heads 32,8,1 \
  --runs 5 --warmup 1 --sample-rows 4 --out "$out/validate_gqa.json" > "$out/validate_gqa.txt" 2>&1
cat "$out/validate_gqa.txt"
fi

if wants ncu; then
log "ncu: DRAM bytes of one fa2_tc launch"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
dram() {  # NAME fa-validate arguments...
  local name=$1
  shift
  echo "== $name: fa-validate $*" >> "$out/ncu_dram.txt"
  timeout 40 "$ncu" --clock-control none --kernel-name regex:fa2_tc_forward --launch-count 1 --csv --page raw \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum "$fv" "$@" --runs 1 --warmup 0 \
    --sample-rows 1 >> "$out/ncu_dram.txt" 2>&1 || echo "ncu failed or cut off: $name" >> "$out/ncu_dram.txt"
}
for kv in 32 8 1; do
  for b in 8 64; do dram "decode B=$b KV=$kv Nk=16384" --grid decode --algo fa2_tc --kv-heads $kv --batches $b --Nk 16384; done
  dram "decode B=1 KV=$kv Nk=65536" --grid decode --algo fa2_tc --kv-heads $kv --batches 1 --Nk 65536
  for n in 4096 16384; do
    dram "prefill N=$n B=2 H=32 KV=$kv" --algo fa2_tc --N $n --d 128 --dtype fp16 --batch 2 --heads 32 --kv-heads $kv --causal off
  done
done
grep -c "^==" "$out/ncu_dram.txt"
fi

if wants torch; then
log "torch sdpa --grid decode"
step 100 torch-decode python3 cuda/scripts/torch_sdpa.py "${decode[@]}" --runs 10 --out "$out/torch_decode.json" \
  > "$out/torch_decode.txt" 2>&1
tail -30 "$out/torch_decode.txt"
fi
log "done"
