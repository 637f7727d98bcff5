"""Runs tests of tests/python with pytest (what CTest's python_fasim and python_course do), failing with a
fix when this interpreter lacks numpy or pytest. Usage: run_pytest.py TEST_DIR_OR_FILE [pytest arguments...]"""

import sys

missing = []
for name in ("numpy", "pytest"):
    try:
        __import__(name)
    except ImportError:
        missing.append(name)
if missing:
    print(f"tests/python: FAILED: {sys.executable} cannot import {', '.join(missing)}. Install them with "
          "scripts/install-deps.sh (Debian packages python3-numpy, python3-pytest), or configure with "
          "-DPython3_EXECUTABLE=<a python that has them>.")
    sys.exit(1)

import pytest  # noqa: E402

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
