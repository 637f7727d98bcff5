#!/usr/bin/env bash
# Regenerates the notebooks in notebooks_export/ from the built lesson programs: every
# notebook is written by its lesson (`lesson-NN --export-notebook DIR`), from the same step
# definitions the terminal program prints, so the two never drift apart.
#
#   notebooks_export/regenerate.sh [BUILD_DIR [OUT_DIR]]
#
# BUILD_DIR defaults to build/ (scripts/build.sh), OUT_DIR to notebooks_export/.
# The top cell of each notebook has room for an "Open in Colab" badge: set default_repo
# below (or FASIM_NOTEBOOK_REPO=OWNER/NAME for one run) to the published repository.
set -euo pipefail
default_repo=""
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="${1:-$root/build}"
out="${2:-$here}"
repo="${FASIM_NOTEBOOK_REPO:-$default_repo}"
repo_args=()
[ -n "$repo" ] && repo_args=(--notebook-repo "$repo")
mkdir -p "$out"
for n in 01 02 03 04 05 06 07 08 09 10 11; do
  bin="$build/lessons/lesson-$n"
  if [ ! -x "$bin" ]; then
    echo "regenerate: $bin is missing: build the lessons first (scripts/build.sh)" >&2
    exit 1
  fi
  "$bin" --export-notebook "$out" "${repo_args[@]}"
done
echo "regenerate: wrote $(ls "$out"/*.ipynb | wc -l) notebooks to $out"
