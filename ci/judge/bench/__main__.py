"""python3 -m ci.judge.bench RUN_DIR [--no-plot] [--system-map FILE]"""
import sys

from ci.judge.bench.cli import main

sys.exit(main())
