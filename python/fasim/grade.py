"""python3 -m fasim.grade FILE.py: fa-grade for a Python tile program (fasim.course.main)."""

import sys

from .course import main

if __name__ == "__main__":
    sys.exit(main())
