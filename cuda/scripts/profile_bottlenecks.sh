#!/usr/bin/env bash
# Where do the CUDA kernels spend their time? Nsight Compute on one configuration per kernel
# family: instruction mix, issue activity, shared-memory wavefronts and bank conflicts, warp stall
# reasons, occupancy, and the L2 traffic at three points (SM side, request coalescer, L2 slices).
# The runtime model's terms are checked against these (docs/model.md, cuda/results/*/README.md).
#
#   [CONFIGS="fa2 fa2_tc"] [DTYPE=fp16] cuda/scripts/profile_bottlenecks.sh BUILD_DIR OUT_DIR [N] [d]   (default N=4096, d=64)
#   CONFIGS takes fa-validate's kernel names and torch_flash (PyTorch's FlashAttention-2, via torch_sdpa.py).
set -uo pipefail
build=${1:?build dir}
out=${2:?output dir}
N=${3:-4096}
d=${4:-64}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
exe="$build/cuda/validate/fa-validate"

# Metrics that exist on this chip (the L2 request coalescer, lrc__, is Hopper's).
"$ncu" --query-metrics > "$out/query_metrics.txt" 2>&1
grep -E "^(lrc__|l1tex__m_xbar2l1tex|l1tex__m_l1tex2xbar|lts__t_(sectors|requests)_srcunit_tex|smsp__inst_executed|l1tex__data_pipe_lsu_wavefronts_mem_shared|sm__pipe_fma|smsp__issue)" \
  "$out/query_metrics.txt" > "$out/metrics_available.txt"

want="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__cycles_active.avg,sm__cycles_elapsed.avg,\
smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,\
sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_lsu.sum,sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_xu.sum,\
sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__sass_thread_inst_executed_op_ffma_pred_on.sum,\
sm__inst_executed_pipe_tensor.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,\
smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__warps_active.avg.per_cycle_active,\
l1tex__m_xbar2l1tex_read_sectors.sum,l1tex__m_l1tex2xbar_write_sectors.sum,\
lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,dram__bytes_read.sum,dram__bytes_write.sum"
# The L2 request coalescer's read counters: requests in from the SMs, sectors out to the slices.
lrc="lrc__xbar2lrc_requests_op_read.sum,lrc__lrc2xbar_sectors_op_read.sum,lrc__lts2lrc_sectors_op_read.sum,\
lrc__xbar2gpc_sectors_op_read.sum,lrc__lrc2xbar_sectors_op_read_coalescing_achieved.sum"
[[ -n "$lrc" ]] && want="$want,$lrc"
pipe=$(grep -oE "^sm__inst_executed_pipe_tensor[a-z_0-9]*" "$out/query_metrics.txt" | sort -u | sed 's/$/.sum/' | paste -sd, -)
[[ -n "$pipe" ]] && want="$want,$pipe"
# ncu refuses the whole list if one name is unknown: keep those whose base name the chip lists.
keep=()
for m in ${want//,/ }; do
  base=${m%%.*}
  if grep -qE "^${base}[[:space:]]" "$out/query_metrics.txt"; then keep+=("$m"); else echo "not on this chip: $m"; fi
done
want=$(IFS=,; echo "${keep[*]}")

for cfg in ${CONFIGS:-fa2 tiled fa1 standard_tiled fa2_tc}; do  # CONFIGS="fa2_tc" profiles a subset
  dtype=${DTYPE:-fp32}  # DTYPE=fp16 profiles every kernel in fp16 (cuBLAS then runs on the tensor cores)
  [[ -z ${DTYPE:-} && ( $cfg == *_tc || $cfg == torch_flash ) ]] && dtype=fp16  # no fp32 tensor-core kernels
  child=("$exe" --batch 2 --heads 8 --profile-one "$cfg,$N,$d,$dtype,0")
  select=()
  if [[ $cfg == torch_flash ]]; then
    # PyTorch's FlashAttention-2 (the flash backend of SDPA), non-causal: its first forward kernel only.
    child=(python3 "$(dirname "$0")/torch_sdpa.py" --N "$N" --d "$d" --dtype "$dtype" --batch 2 --heads 8
           --backends flash --runs 1 --warmup 0 --out "$out/torch_flash_run.json")
    select=(--kernel-name regex:flash_fwd --launch-count 1)
  fi
  echo "== $cfg N=$N d=$d $dtype"
  "$ncu" --clock-control none "${select[@]}" --csv --page raw --print-units base --metrics "$want" "${child[@]}" \
    > "$out/raw_${cfg}.csv" 2> "$out/raw_${cfg}.err" || { echo "ncu raw failed for $cfg"; tail -3 "$out/raw_${cfg}.err"; }
  # InstructionStats: executed instructions per SASS opcode (what the runtime model's instruction
  # counts are checked against).
  "$ncu" --clock-control none "${select[@]}" --csv --page details --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section InstructionStats "${child[@]}" \
    > "$out/sections_${cfg}.csv" 2> "$out/sections_${cfg}.err" || echo "ncu sections failed for $cfg"
  # The same opcode counts as metric instances (one row per opcode), for the kernels of this config.
  "$ncu" --clock-control none "${select[@]}" --csv --page raw --print-units base --print-metric-instances values \
    --metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum "${child[@]}" \
    > "$out/opcodes_${cfg}.csv" 2> "$out/opcodes_${cfg}.err" || echo "ncu opcodes failed for $cfg"
done
