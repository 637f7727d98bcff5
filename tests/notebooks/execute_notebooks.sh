#!/usr/bin/env bash
# Executes every notebook in notebooks_export/ against the tools of BUILD_DIR.
# Usage: execute_notebooks.sh SOURCE_DIR BUILD_DIR
# Needs a Python 3 with nbformat, nbclient, ipykernel and matplotlib: $FASIM_PYTHON if set,
# else /usr/bin/python3 (where Debian's python3-* packages install), else python3 on PATH.
set -euo pipefail
src="$1"
build="$2"
py=""
for candidate in "${FASIM_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$candidate" ] || continue
  command -v "$candidate" >/dev/null 2>&1 || continue
  if "$candidate" -c "import nbformat, nbclient, ipykernel, matplotlib" >/dev/null 2>&1; then
    py="$candidate"
    break
  fi
done
if [ -z "$py" ]; then
  echo "notebooks: FAILED: no Python 3 here can import nbformat, nbclient, ipykernel and matplotlib,"
  echo "so the notebooks cannot be executed. Install them with scripts/install-deps.sh (Debian"
  echo "packages python3-nbformat python3-nbclient python3-ipykernel python3-matplotlib), or point"
  echo "FASIM_PYTHON at a Python that has them."
  exit 1
fi
exec "$py" "$src/tests/notebooks/execute_notebooks.py" "$src/notebooks_export" "$build"
