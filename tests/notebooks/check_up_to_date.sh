#!/usr/bin/env bash
# Regenerates every notebook into a temporary folder and fails if any committed notebook
# differs (or is missing, or is stale). Usage: check_up_to_date.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"
build="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Only the badge repository committed in regenerate.sh counts, not one set in this shell.
env -u FASIM_NOTEBOOK_REPO bash "$src/notebooks_export/regenerate.sh" "$build" "$tmp" >/dev/null
status=0
count=0
for fresh in "$tmp"/*.ipynb; do
  name="$(basename "$fresh")"
  count=$((count + 1))
  committed="$src/notebooks_export/$name"
  if [ ! -f "$committed" ]; then
    echo "notebooks: $name is missing from notebooks_export/"
    status=1
  elif ! cmp -s "$fresh" "$committed"; then
    echo "notebooks: notebooks_export/$name differs from a fresh export of its lesson:"
    diff -u "$committed" "$fresh" | head -40 || true
    status=1
  fi
done
for committed in "$src"/notebooks_export/*.ipynb; do
  [ -e "$committed" ] || continue
  if [ ! -e "$tmp/$(basename "$committed")" ]; then
    echo "notebooks: notebooks_export/$(basename "$committed") has no lesson that exports it"
    status=1
  fi
done
if [ "$status" -ne 0 ]; then
  echo "notebooks: FAILED. Run notebooks_export/regenerate.sh (after building) and commit notebooks_export/."
  exit 1
fi
echo "notebooks: all $count notebooks match their lessons"
