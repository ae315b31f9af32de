"""python3 -m ci.judge.realstacks RUN_DIR | --results FILE | --shim LOG --script TXT --mode MODE"""
import sys

from ci.judge.realstacks.cli import main

sys.exit(main())
