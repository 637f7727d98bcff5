#!/usr/bin/env bash
# Two fa-sim builds must count alike: runs both on a grid of configurations (every algorithm, forward and
# backward, causal, Nq != Nk, PyTorch's math backend, dtypes, presets, matmul modes, decode shapes, kernels, sweeps, long contexts)
# and compares their JSON byte for byte (the version line left out). A change meant to make the counting
# executor faster, not different, passes with "0 differ".
#   usage: bench/compare_builds.sh OLD_FA_SIM NEW_FA_SIM [MAX_N]   (MAX_N: largest N tried, default 1048576)
set -uo pipefail
old=${1:?usage: compare_builds.sh OLD_FA_SIM NEW_FA_SIM [MAX_N]}
new=${2:?usage: compare_builds.sh OLD_FA_SIM NEW_FA_SIM [MAX_N]}
max_n=${3:-1048576}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

configs=()
for algo in standard tiled fa1 fa2 all; do
  for n in 1000 4096 65536 262144 "$max_n"; do
    [[ $n -gt $max_n ]] && continue
    for pass in fwd bwd fwd+bwd; do
      configs+=("--algo $algo --N $n --pass $pass")
      configs+=("--algo $algo --N $n --pass $pass --causal")
    done
    configs+=("--algo $algo --N $n --d 128 --dtype fp32")
    configs+=("--algo $algo --N $n --Nk $((n * 2 + 3)) --causal")
  done
done
# PyTorch's math backend: an N x Nk fp32 tensor per kernel, its rows ragged where Nk is no multiple of 512
for n in 1000 4096 65536; do
  for pass in fwd bwd; do configs+=("--algo torch_math --N $n --pass $pass" "--algo torch_math --N $n --pass $pass --causal"); done
  configs+=("--algo torch_math --N $n --Nk $((n * 2 + 3)) --causal" "--algo torch_math --N $n --dtype fp32 --d 128")
done
for m in tiled naive library; do
  for n in 4096 65536; do
    configs+=("--algo standard --N $n --matmul $m" "--algo standard --N $n --matmul $m --pass bwd" "--algo standard --N $n --matmul $m --causal")
  done
done
for gpu in H100-SXM H200 A100-SXM4-40GB; do
  configs+=("--algo all --N 8192 --gpu $gpu" "--algo all --N 8192 --gpu $gpu --pass bwd --causal")
  configs+=("--algo all --N 65536 --gpu $gpu --pass fwd+bwd --causal --d 128")
  for k in fa2_tc fa2_tc_tuned fa1_tc standard_cublas fa2_bwd_tc; do configs+=("--kernel $k --N 16384 --gpu $gpu" "--kernel $k --N 4096 --causal --gpu $gpu"); done
done
for nk in 1024 65536 1048576; do
  configs+=("--algo flash_decoding --N 1 --Nk $nk --heads 32 --kv-heads 8 --d 128" "--algo all --N 16 --Nk $nk --heads 32 --kv-heads 1")
done
# Lengths that are an odd number of elements: rows and k-steps meet 128-byte lines at places that recur
for n in 20003 100003; do
  for algo in standard fa1 fa2; do
    configs+=("--algo $algo --N $n --pass fwd+bwd" "--algo $algo --N $n --causal --pass fwd+bwd" "--algo $algo --N $n --dtype fp32")
  done
done
configs+=("--algo torch_math --N 20003" "--algo torch_math --N 20003 --pass bwd --causal" "--algo torch_math --N 5001 --Nk 20003")
configs+=("--algo all --sweep N=512:$max_n" "--algo all --sweep N=512:65536 --causal --pass fwd+bwd")

differ=0
for c in "${configs[@]}"; do
  # shellcheck disable=SC2086
  "$old" $c --json 2>&1 | grep -v '"version"' > "$work/old.json"
  # shellcheck disable=SC2086
  "$new" $c --json 2>&1 | grep -v '"version"' > "$work/new.json"
  if ! cmp -s "$work/old.json" "$work/new.json"; then
    echo "differ: $c"
    differ=$((differ + 1))
  fi
done
echo "${#configs[@]} configurations, $differ differ"
[[ $differ -eq 0 ]]
