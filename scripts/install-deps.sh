#!/usr/bin/env bash
# Installs what fa-sim needs from Debian's packages, skipping what is already there.
# The CUDA toolkit (nvcc) is optional: the CUDA kernels build when it is found.
set -euo pipefail
packages=(g++ cmake make libeigen3-dev libcli11-dev catch2 nlohmann-json3-dev librsvg2-bin python3
          python3-nbformat python3-nbclient python3-ipykernel python3-matplotlib  # notebooks_export/ is executed by the tests
          pybind11-dev python3-dev python3-numpy python3-pytest  # the Python module fasim (python/) and its tests
          clang-16 libclang-rt-16-dev)  # the libFuzzer targets (fuzz/), run by the ctest test "sanitizers"
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: no CUDA toolkit found; the simulator builds, the CUDA kernels are skipped"
fi
