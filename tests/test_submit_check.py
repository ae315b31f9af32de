"""make submit-check: one line per check, every check runs, the exit
status says whether all passed. The checks are stand-ins (SUBMIT_CMD_*)."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "ci", "checks", "submit-check.sh")
CHECKS = ["apply-fresh", "checkpatch", "kernel-doc", "bisect-build",
          "sparse", "kunit", "vmtest", "vmtest-debug"]
LINE = re.compile(r"^(PASS|FAIL)  (\S+)\s+(\d+) s  (.*)$")


def run(tmp_path, **cmds):
    env = dict(os.environ, SUBMIT_LOGS=str(tmp_path / "logs"))
    for c in CHECKS:
        env["SUBMIT_CMD_" + c.replace("-", "_")] = f"echo '==> {c}: fine'"
    for k, v in cmds.items():
        env[k] = v
    r = subprocess.run(["bash", SCRIPT], env=env, capture_output=True,
                       text=True)
    lines = [LINE.match(x).groups() for x in r.stdout.splitlines()
             if LINE.match(x)]
    return r, lines


def test_all_pass(tmp_path):
    r, lines = run(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [(s, n) for s, n, _, _ in lines] == [("PASS", c) for c in CHECKS]
    assert lines[2][3] == "kernel-doc: fine"
    assert "submit-check: all 8 checks passed" in r.stdout


def test_a_failure_does_not_stop_the_others(tmp_path):
    r, lines = run(tmp_path, SUBMIT_CMD_sparse="echo building; echo; "
                   "echo 'include/x.h: warning: bad'; echo "
                   "'==> sparse: 3 files, 1 new warnings'; exit 1",
                   SUBMIT_CMD_vmtest="exit 4")
    assert r.returncode == 1
    assert [n for _, n, _, _ in lines] == CHECKS
    status = {n: (s, d) for s, n, _, d in lines}
    assert status["sparse"] == (
        "FAIL", "exit 1: sparse: 3 files, 1 new warnings; "
        f"log: {tmp_path}/logs/sparse.log")
    assert status["vmtest"][0] == "FAIL"
    assert status["vmtest"][1].startswith("exit 4: no output")
    assert all(s == "PASS" for n, (s, _) in status.items()
               if n not in ("sparse", "vmtest"))
    assert "2 of 8 checks failed: sparse vmtest" in r.stdout
    assert "include/x.h: warning: bad" in \
        (tmp_path / "logs" / "sparse.log").read_text()


def test_subset_and_unknown_checks(tmp_path):
    r, lines = run(tmp_path, CHECKS="kernel-doc checkpatch")
    assert r.returncode == 0
    assert [n for _, n, _, _ in lines] == ["kernel-doc", "checkpatch"]
    r, lines = run(tmp_path, CHECKS="checkpatch typo")
    assert r.returncode == 2 and "unknown check 'typo'" in r.stderr
    assert lines == []


def test_new_warnings_ignores_line_numbers_and_counts(tmp_path):
    base = tmp_path / "base"
    new = tmp_path / "new"
    base.write_text("a.c:10:5: warning: x\nb.h:3: warning: y\n")
    new.write_text("a.c:12:5: warning: x\na.c:40:1: warning: x\n"
                   "b.h:7: warning: y\nc.c:1:1: error: z\n")
    r = subprocess.run(["bash", "-c", f'. {ROOT}/ci/build/lib.sh; '
                        f'new_warnings {base} {new}'],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["a.c: warning: x", "c.c: error: z"]
