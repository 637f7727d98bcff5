#!/usr/bin/env bash
# Long contexts (issue 24): fa-sim's time and peak memory for one configuration of every algorithm at
# N = 2^24, the same by the by-block path where it still runs, and the sweep --algo all over
# N = 512..2^24. Each command runs as its own process under /usr/bin/time (wall and CPU seconds, peak
# resident memory), so the numbers are what a user's shell sees. Records bench/results/long_context.txt.
# Usage: bench/long_context.sh [BUILD_DIR]   (default: build; Release)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
fa_sim=$build/sim/fa-sim
out=$here/results/long_context.txt
limit=${LONG_CONTEXT_LIMIT_S:-1800}  # a command that takes longer is stopped and reported so

run() {  # label, then fa-sim's arguments
    local label=$1
    shift
    local stats rc wall user rss
    stats=$(mktemp)
    /usr/bin/time -o "$stats" -f "%e %U %M" timeout "$limit" "$fa_sim" "$@" --json > /dev/null 2> "$stats.err"
    rc=$?
    read -r wall user rss < <(tail -1 "$stats")
    if (( rc == 0 )); then
        printf "%-58s %10.2f %10.2f %10.1f\n" "$label" "$wall" "$user" "$(echo "$rss / 1024" | bc -l)"
    elif (( rc == 124 )); then
        printf "%-58s %10s %10s %10.1f\n" "$label" "> ${limit}" "-" "$(echo "$rss / 1024" | bc -l)"
    else
        printf "%-58s failed (exit %d): %s\n" "$label" "$rc" "$(head -1 "$stats.err")"
    fi
    rm -f "$stats" "$stats.err"
}

{
  echo "# long_context.sh: $(date -u +%Y-%m-%d) on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# build $(grep CMAKE_BUILD_TYPE: "$build/CMakeCache.txt" | cut -d= -f2), commit $(git -C "$here/.." rev-parse --short HEAD); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# issue 24's targets: one configuration of every algorithm up to N = 2^24 in < 50 ms; --algo all --sweep"
  echo "# N=512:16777216 in < 2 s; peak memory < 100 MB. Default problem: B=1, H=16, d=64, fp16, A100-SXM4-40GB."
  printf "%-58s %10s %10s %10s\n" "command (fa-sim ... --json)" "wall (s)" "cpu (s)" "peak (MB)"
  for algo in fa2 fa1; do
    run "--algo $algo --N 16777216" --algo "$algo" --N 16777216
    run "--algo $algo --N 16777216 --pass bwd" --algo "$algo" --N 16777216 --pass bwd
  done
  run "--algo tiled --N 16777216" --algo tiled --N 16777216
  for n in 1048576 16777216; do run "--algo fa2 --N $n --causal" --algo fa2 --N "$n" --causal; done
  run "--algo fa2 --N 16777216 --causal --pass bwd" --algo fa2 --N 16777216 --causal --pass bwd
  for n in 1048576 4194304 16777216; do run "--algo fa1 --N $n --causal" --algo fa1 --N "$n" --causal; done
  run "--algo fa1 --N 16777216 --causal --pass bwd" --algo fa1 --N 16777216 --causal --pass bwd
  # Training on Hopper at d = 128: the forward's 128-row Q tiles, the backward's 64-row ones (one grid)
  for n in 4194304 16777216; do
    run "--algo fa2 --N $n --causal --pass fwd+bwd --gpu H200 --d 128" --algo fa2 --N "$n" --causal --pass fwd+bwd --gpu H200 --d 128
  done
  # 32-row Q tiles at d = 256 on the cards with the least shared memory: 2^19 blocks a causal kernel
  for gpu in T4 L4; do
    run "--algo fa2 --N 16777216 --causal --pass fwd+bwd --gpu $gpu --d 256" --algo fa2 --N 16777216 --causal --pass fwd+bwd --gpu "$gpu" --d 256
  done
  # FA1's passes at d = 128 take K/V tiles that do not divide each other (163 and 83 keys on the A100): the
  # L2 model follows their tensors on one-row tiles, untracked past 2^22 of them (rule 1's record instead)
  for n in 1048576 16777216; do run "--algo fa1 --N $n --pass fwd+bwd --d 128" --algo fa1 --N "$n" --pass fwd+bwd --d 128; done
  run "--algo fa1 --N 1048576 --pass fwd+bwd --d 128 --causal" --algo fa1 --N 1048576 --pass fwd+bwd --d 128 --causal
  # its causal backward alone: 83-row tiles, whose l and m recur in 128-byte lines every 32 tiles
  run "--algo fa1 --N 1048576 --pass bwd --d 128 --causal" --algo fa1 --N 1048576 --pass bwd --d 128 --causal
  run "--algo fa2 --N 16777216 --d 256 --batch 4 --heads 16384" --algo fa2 --N 16777216 --d 256 --batch 4 --heads 16384
  run "--algo flash_decoding --N 1 --Nk 16777216 --heads 32 --kv-heads 8 --d 128" \
      --algo flash_decoding --N 1 --Nk 16777216 --heads 32 --kv-heads 8 --d 128
  for n in 1048576 4194304 16777216; do run "--algo standard --N $n" --algo standard --N "$n"; done
  for n in 1048576 16777216; do run "--algo standard --N $n --causal" --algo standard --N "$n" --causal; done
  for n in 1048576 16777216; do run "--algo standard --N $n --pass bwd" --algo standard --N "$n" --pass bwd; done
  # At d = 128 the GEMMs over P have two blocks per row of output tiles that read P's row band together: their
  # k-loops carry over in short spans, and the cost grows with N^2 (not at 2^24: hours)
  for p in fwd bwd; do run "--algo standard --N 65536 --d 128 --pass $p" --algo standard --N 65536 --d 128 --pass "$p"; done
  # PyTorch's math backend (a library model, not in --algo all): its element-wise kernels over N x Nk
  for n in 1048576 16777216; do run "--algo torch_math --N $n" --algo torch_math --N "$n"; done
  run "--algo torch_math --N 16777216 --causal" --algo torch_math --N 16777216 --causal
  run "--algo torch_math --N 16777216 --pass bwd" --algo torch_math --N 16777216 --pass bwd
  # Lengths that are no whole number of 128-byte lines (an odd number of fp16 elements; 50,000 keys: rows
  # of PyTorch's element-wise kernels end in a ragged block): rows and k-steps meet the lines at places
  # that recur, counted a unit of rows or k-steps at a time.
  for n in 1000003 16777215; do
    run "--algo standard --N $n" --algo standard --N "$n"
    run "--algo standard --N $n --pass bwd" --algo standard --N "$n" --pass bwd
  done
  for n in 1000003 4194303 16777215; do run "--algo standard --N $n --causal" --algo standard --N "$n" --causal; done
  for algo in fa2 fa1; do run "--algo $algo --N 16777215 --causal" --algo "$algo" --N 16777215 --causal; done
  for n in 50000 1000000 16777215; do run "--algo torch_math --N $n" --algo torch_math --N "$n"; done
  run "--algo torch_math --N 1000003 --pass bwd" --algo torch_math --N 1000003 --pass bwd
  echo "# the same by the by-block path (--count block), where it still runs:"
  run "--algo fa2 --N 1048576 --count block" --algo fa2 --N 1048576 --count block
  run "--algo fa2 --N 1048576" --algo fa2 --N 1048576
  run "--algo standard --N 65536 --count block" --algo standard --N 65536 --count block
  run "--algo standard --N 65536" --algo standard --N 65536
  echo "# sweeps:"
  run "--algo all --sweep N=512:1048576" --algo all --sweep N=512:1048576
  run "--algo all --sweep N=512:16777216" --algo all --sweep N=512:16777216
  run "--algo fa2,fa1,tiled --sweep N=512:16777216" --algo fa2,fa1,tiled --sweep N=512:16777216
} | tee "$out"
