"""python3 ci/bench RUN_DIR [--no-plot] [--system-map FILE]"""
import os
import sys

# Run as a directory, sys.path[0] is ci/bench: import from ci instead, so
# that the package's modules shadow no top-level name.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.cli import main  # noqa: E402

sys.exit(main())
