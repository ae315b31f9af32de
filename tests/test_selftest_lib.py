"""The selftests' shared reader and cookie matcher, unit-tested on the host
(selftests/unittest/, built by make selftests), read through our KTAP
parser."""
import os
import subprocess

import pytest

from ci.judge.vmtest import ktap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# make test names the binary of the tree it built; a bare pytest run
# looks in the default tree's place.
BINARY = os.environ.get("VMTEST_LIB_UNITTEST") or os.path.join(
    ROOT, "build", "out", "linux", "selftests", "lib_unittest")
if os.environ.get("VMTEST_LIB_UNITTEST") and not os.path.exists(BINARY):
    raise RuntimeError(f"VMTEST_LIB_UNITTEST={BINARY}: no such binary")


@pytest.mark.skipif(not os.path.exists(BINARY),
                    reason="run 'make selftests' first (make test does)")
def test_selftest_lib_unit_tests_pass():
    r = subprocess.run([BINARY], capture_output=True, text=True, timeout=60)
    parsed = ktap.parse(r.stdout)
    assert parsed.problems == [], r.stdout
    failed = [t.name for t in parsed.root.children if t.status != "pass"]
    assert failed == [] and r.returncode == 0, r.stdout
    assert len(parsed.root.children) >= 5
