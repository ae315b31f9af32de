"""ci/checks/timings.py: make check's record of its own time in doc/timings.md
and README.md's one line, on copies of both."""
import os
import shutil

from ci.checks import timings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = ["deps                      1 s  rc=0", "tree                     31 s  rc=0"]


def copy(tmp_path):
    (tmp_path / "doc").mkdir()
    for f in ("README.md", "doc/timings.md"):
        shutil.copy(os.path.join(ROOT, f), tmp_path / f)
    return tmp_path


def test_a_cold_run_appends_its_row_and_rewrites_readmes_line(tmp_path):
    root = copy(tmp_path)
    before = (root / "doc/timings.md").read_text()
    written = timings.record(str(root), "cold", 2195, STEPS, date="2030-01-02",
                             where="2 cores, 24 GiB", what="`abc1234` (13 fixes + 38)")
    assert len(written) == 2
    after = (root / "doc/timings.md").read_text().split("\n")
    row = next(l for l in after if "2030-01-02" in l)
    assert "2195 s (37 min): deps 1, tree 31 |" in row and "`abc1234`" in row
    # the row ends the "make check" table
    i = after.index(row)
    assert after[i - 1].startswith("|") and not after[i + 1].startswith("|")
    assert len(after) == len(before.split("\n")) + 1
    readme = (root / "README.md").read_text()
    line = timings.README_LINE.search(readme).group(0)
    assert "37 min on 2 cores, 24 GiB (2030-01-02, `abc1234`;" in line
    assert readme.count("\n") == open(os.path.join(ROOT, "README.md")).read().count("\n")


def test_the_row_gives_each_step_s_cpu_time_and_the_builds_beside_them(
        tmp_path):
    root = copy(tmp_path)
    steps = ["deps                      1 s  rc=0  cpu    0 s",
             "vmtest                  339 s  rc=0  cpu  285 s",
             "(normal)                445 s  rc=0  cpu  424 s",
             "(debug)                  20 s  rc=2  cpu    ? s"]
    timings.record(str(root), "fresh", 800, steps, date="2030-01-02",
                   where="2 cores", what="`abc1234`")
    row = next(ln for ln in (root / "doc/timings.md").read_text().split("\n")
               if "2030-01-02" in ln)
    assert ("800 s (13 min): deps 1 (0 CPU-s), vmtest 339 (285 CPU-s); "
            "built beside them: normal 445 (424 CPU-s), debug 20 (? CPU-s) "
            "failed, built again by its step |") in row


def test_a_fresh_run_with_a_warm_ccache_leaves_readme_alone(tmp_path):
    root = copy(tmp_path)
    written = timings.record(str(root), "fresh", 1138, STEPS, date="2030-01-02",
                             where="2 cores", what="`abc1234`")
    assert written == [str(root / "doc/timings.md")]
    assert (root / "README.md").read_text() == \
        open(os.path.join(ROOT, "README.md")).read()
    assert "with a warm ccache" in (root / "doc/timings.md").read_text()


def test_a_clone_with_build_outputs_is_warm(tmp_path):
    (tmp_path / "out").mkdir()
    assert timings.state(str(tmp_path)) == "warm"
    assert timings.state(str(tmp_path / "none")) in ("cold", "fresh")


def test_the_checkout_it_records_into_is_the_repository_s_root():
    """make check runs it as python3 -m ci.checks.timings: its ROOT is the
    checkout (doc/timings.md, patches/), not ci/."""
    assert os.path.exists(os.path.join(timings.ROOT, "doc", "timings.md"))
    assert os.path.isdir(os.path.join(timings.ROOT, "patches", "fixes"))


def test_busy_is_the_machine_s_cpu_time_against_its_cores():
    """/proc/stat's cpu fields at the start and end: user, nice, system,
    irq, softirq and steal are work; idle and iowait are not."""
    import os
    hz = os.sysconf("SC_CLK_TCK")
    cores = os.cpu_count()
    start = "100 0 50 1000 10 0 0 0 0 0"
    # 600 s of work (user 300, nice 200, system 100), idle and iowait
    # 999 s: over a run of 600 s
    end = " ".join(str(int(a) + b * hz) for a, b in zip(
        start.split(), (300, 200, 100, 900, 99, 0, 0, 0, 0, 0)))
    line = timings.busy(600, start, end)
    assert line.startswith(f"check: 600 CPU-seconds of work in 600 s on "
                           f"{cores} cores: busy {100 // cores:.0f} %")
    assert line.endswith(f"ends before {600 / cores:.0f} s)")
