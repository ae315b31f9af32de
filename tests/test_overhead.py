"""make overhead's host side (ci/judge/overhead.py): the runner's lines
read, the medians and ratios, a failed run failing. Times are never
asserted of a real run: these are the judge's own arithmetic."""
import pytest

from ci.judge import overhead


def lines(runs, end=True):
    out = ["# realstacks-start: kernel=6.12.0 plan=overhead reps=3"]
    for prog, rep, mode, hz, cs, samples, nbytes, rc in runs:
        out.append(f"# realstacks-overhead: program={prog} rep={rep} "
                   f"mode={mode} hz={hz} loops=4 cs={cs} "
                   f"samples={samples} bytes={nbytes} record={rc}")
    if end:
        out.append("# realstacks-end: overhead")
    return "\n".join(out) + "\n"


RUNS = [("xz", rep, mode, hz, cs, samples, nbytes, 0)
        for rep, cs_add in ((1, 0), (2, 10), (3, -10))
        for mode, hz, cs, samples, nbytes in (
            ("none", 0, 200, 0, 0),
            ("inplace", 1000, 210, 2000, 600000),
            ("deferred", 1000, 205, 2000, 500000),
            ("inplace", 10000, 260, 20000, 4000000),
            ("deferred", 10000, 240, 20000, 3000000))
        for cs in (cs + cs_add,)]


def test_medians_and_ratios_per_program_and_rate(tmp_path, capsys):
    res = tmp_path / "results.log"
    res.write_text(lines(RUNS))
    assert overhead.main(["--results", str(res)]) == 0
    out = capsys.readouterr().out
    rows = [l for l in out.splitlines() if l.startswith("xz")]
    assert len(rows) == 2
    # 1 kHz: 210/200 in place, 205/200 deferred, 205/210 between them;
    # 300 and 250 bytes per sample
    assert rows[0].split() == ["xz", "1", "kHz", "|", "2.00", "s", "|",
                               "1.050", "2000", "300", "|", "1.025",
                               "2000", "250", "|", "0.976"]
    assert rows[1].split()[-1] == f"{240 / 260:.3f}"
    assert (tmp_path / "summary.txt").read_text().splitlines()[1:] == \
        out.splitlines()[1:4]


def test_a_failed_or_unfinished_run_fails(tmp_path, capsys):
    bad = list(RUNS)
    bad[1] = bad[1][:7] + (1,)
    res = tmp_path / "results.log"
    res.write_text(lines(bad))
    assert overhead.main(["--results", str(res)]) == 1
    assert "perf record exited 1" in capsys.readouterr().out
    res.write_text(lines(RUNS, end=False))
    assert overhead.main(["--results", str(res)]) == 1
    assert "did not finish" in capsys.readouterr().out


def test_a_real_guest_run(tmp_path, capsys):
    """make overhead's run of 2026-11-30 (tests/data/overhead): every
    program at both rates, both ways, three repetitions, every run made
    and each profiled one with samples; each program's deferred walks in
    both builds timed, one walk per deferred record."""
    import os
    res = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                       "overhead", "results.log")
    start, runs, ended, errors = overhead.parse(open(res).read())
    assert start["reps"] == 3 and ended and not errors
    rates = [r for r in runs if "build" not in r]
    walks = [r for r in runs if "build" in r]
    assert len(rates) == 3 * 3 * 5 and len(walks) == 3 * 3 * 2
    assert all(r["record"] == 0 and r["cs"] > 0 for r in rates)
    assert all(r["samples"] > 0 for r in rates if r["mode"] != "none")
    # Each deferred record is one walk's, timed by the probes but for at
    # most one (the workload's last, at its exit, as its events close);
    # the walks found frames
    assert all(r["record"] == 0 and r["records"] > 1000 and
               0 <= r["records"] - r["walks"] <= 1 and
               r["frames"] > r["records"] for r in walks)
    assert overhead.main(["--results", res, "--out", str(tmp_path)]) == 0
    rows = [l.split()[:3] for l in capsys.readouterr().out.splitlines()
            if l.split()[:1] in (["gzip"], ["sqlite3"], ["xz"])]
    assert rows == [[p, r, "kHz"] for p in ("gzip", "sqlite3", "xz")
                    for r in ("1", "10")] + \
        [[p, "|", rows[6 + i][2]] for i, p in enumerate(("gzip", "sqlite3",
                                                          "xz"))]


def walk_lines(walks):
    return [f"# realstacks-walks: program={p} build={b} rep={rep} "
            f"walks={w} ns={ns} frames={f} records={d} record={rc}"
            for p, b, rep, w, ns, f, d, rc in walks]


WALKS = [("sqlite3", b, rep, 1000, ns, frames, 1000, 0)
         for rep, add in ((1, 0), (2, 3000), (3, -3000))
         for b, ns, frames in (("fp", 200000 + add, 10000),
                               ("sframe", 900000 + add, 12000))]


def test_walk_cost_per_frame_sframe_against_frame_pointers(tmp_path,
                                                           capsys):
    """The walk lines: each repetition's summed walk time over its frames,
    the median per build, SFrame's over the frame pointers'; they are
    not runs of the rate table."""
    res = tmp_path / "results.log"
    text = lines(RUNS, end=False) + "\n".join(walk_lines(WALKS)) + \
        "\n# realstacks-end: overhead\n"
    res.write_text(text)
    assert overhead.main(["--results", str(res)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len([l for l in out if l.startswith("xz")]) == 2
    row = next(l for l in out if l.startswith("sqlite3")).split()
    # 200000/10000 = 20 ns per frame, 900000/12000 = 75; 10 and 12
    # frames per walk; 75/20
    assert row == ["sqlite3", "|", "20", "10.0", "|", "75", "12.0", "|",
                   "3.75"]


def test_a_walk_run_without_walks_fails(tmp_path, capsys):
    """No walk timed (the probes missed, or no deferred record) is a
    failed run, not a row of zeros."""
    bad = list(WALKS)
    bad[1] = bad[1][:3] + (0,) + bad[1][4:]
    res = tmp_path / "results.log"
    res.write_text(lines(RUNS, end=False) + "\n".join(walk_lines(bad)) +
                   "\n# realstacks-end: overhead\n")
    assert overhead.main(["--results", str(res)]) == 1
    assert "sqlite3 sframe walks rep 1: 0 walks timed" in \
        capsys.readouterr().out


def test_the_header_says_what_the_times_are():
    """An instruction-counter run's times are instructions, and say so;
    a plain TCG run's only give ratios."""
    assert "times are instructions (1 vCPU on QEMU's instruction counter" \
        in overhead.clock({"icount": True, "smp": 1, "accel": "tcg"})
    assert overhead.clock({"icount": False, "accel": "tcg"}) == \
        "times are TCG's: only ratios count"
    assert "unknown" in overhead.clock({})
    assert "host's" in overhead.clock({"accel": "kvm"})


def test_the_table_says_what_its_times_are(tmp_path, capsys):
    """main() heads the table with the run's clock, from the run.json
    beside --results: the kept real run was on the instruction
    counter."""
    import os
    import shutil
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "overhead")
    for f in ("results.log", "run.json"):
        shutil.copy(os.path.join(data, f), tmp_path / f)
    assert overhead.main(["--results", str(tmp_path / "results.log")]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "times are instructions (1 vCPU on QEMU's instruction counter" \
        in head
    (tmp_path / "run.json").unlink()
    assert overhead.main(["--results", str(tmp_path / "results.log")]) == 0
    assert "unknown (no run.json)" in capsys.readouterr().out.splitlines()[0]


def profile_lines(walk=40):
    tag = "# realstacks-profile: program=sqlite3 build=sframe"
    out = ["# realstacks-start: kernel=6.12.0 plan=profile reps=3",
           f"{tag} period=20011 total=1000 walk={walk} frames=200 "
           "records=20 throttled=0 lost=0"]
    fp = "# realstacks-profile: program=sqlite3 build=fp"
    out += [f"{fp} period=20011 total=900 walk=5 frames=250 records=25 "
            "throttled=0 lost=0", f"{fp} self=5 sym=unwind_user_walk",
            f"{fp} incl=5 sym=unwind_user_walk"]
    # the counting pass: 20 walks, a step per frame
    out += [f"{fp} calls=25 sym=unwind_user_walk",
            f"{fp} calls=250 sym=unwind_user_next",
            f"{fp} count_frames=250 count_records=25 missed=0 lost=0",
            f"{tag} calls=20 sym=unwind_user_walk",
            f"{tag} calls=200 sym=unwind_user_next",
            f"{tag} calls=50 sym=sframe_find_fde",
            f"{tag} count_frames=200 count_records=20 missed=0 lost=0"]
    if walk:
        out += [f"{tag} self=30 sym=sframe_fde_find_row",
                f"{tag} self=10 sym=unwind_user_walk",
                f"{tag} incl=40 sym=unwind_user_walk",
                f"{tag} incl=30 sym=sframe_fde_find_row",
                f"{tag} incl=32 sym=sframe_find_row_span"]
    return "\n".join(out + ["# realstacks-end: profile"]) + "\n"


def test_a_profile_gives_each_functions_share_of_the_walk(tmp_path,
                                                           capsys):
    res = tmp_path / "results.log"
    res.write_text(profile_lines())
    assert overhead.main(["--results", str(res)]) == 0
    out = capsys.readouterr().out.splitlines()
    at = 1 + next(i for i, l in enumerate(out)
                  if l.startswith("profile: sqlite3 sframe:"))
    assert out[at] == "self %  incl %  function"
    assert "40 of 1000 kernel samples in the deferred walk" in out[at - 1]
    # 40 samples over 200 frames, 5 over 250: per 1000 frames
    row = next(l for l in out if l.startswith("sqlite3 "))
    assert row.split() == ["sqlite3", "|", "20.0", "|", "200.0", "|",
                           "10.00"]
    # by the samples that went through each function, most first
    assert [l.split() for l in out[at + 1:at + 4]] == [
        ["25.0", "100.0", "unwind_user_walk"],
        ["0.0", "80.0", "sframe_find_row_span"],
        ["75.0", "75.0", "sframe_fde_find_row"]]
    # no overhead table for a profile run
    assert not any(l.startswith("program  rate") for l in out)


def test_a_profile_counts_the_walks_calls_per_frame(tmp_path, capsys):
    """The counting pass's calls per frame, most called first, both
    builds side by side ("-" where a build has no counting pass)."""
    res = tmp_path / "results.log"
    res.write_text(profile_lines())
    assert overhead.main(["--results", str(res)]) == 0
    out = capsys.readouterr().out.splitlines()
    at = next(i for i, l in enumerate(out)
              if l.startswith("counted calls per frame"))
    assert [l.split() for l in out[at:at + 5]] == [
        ["counted", "calls", "per", "frame", "|", "fp", "|", "sframe"],
        ["sqlite3", "unwind_user_next", "|", "1.000", "|", "1.000"],
        ["sqlite3", "sframe_find_fde", "|", "0.000", "|", "0.250"],
        ["sqlite3", "unwind_user_walk", "|", "0.100", "|", "0.100"],
        []]
    by = overhead.profiles(overhead.parse(profile_lines())[1])
    by[("sqlite3", "fp")]["count"] = None
    assert overhead.count_table(by)[3].split()[-3:] == ["-", "|", "0.250"]


def test_a_real_profile_run(tmp_path, capsys):
    """make overhead PROFILE=1's run of 2026-11-30
    (tests/data/overhead-profile): each program's two builds profiled,
    none throttled, the walk's samples a part of the kernel's, its
    records and frames counted; the tables print again."""
    import os
    res = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                       "overhead-profile", "results.log")
    start, runs, ended, errors = overhead.parse(open(res).read())
    assert start["plan"] == "profile" and ended and not errors
    totals = [r for r in runs if "total" in r]
    assert sorted((r["program"], r["build"]) for r in totals) == [
        (p, b) for p in ("gzip", "sqlite3", "xz") for b in ("fp", "sframe")]
    assert all(0 < r["walk"] < r["total"] and not r["throttled"] and
               r["frames"] > r["records"] > 1000 for r in totals)
    assert overhead.main(["--results", res, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("self %  incl %  function") == 6


@pytest.mark.parametrize("text, message", [
    (profile_lines(walk=0), "no sample in the deferred walk"),
    (profile_lines().replace("records=20 throttled=0",
                             "records=20 throttled=3"),
     "perf throttled its samples 3 times"),
    (profile_lines().replace("records=20 throttled=0 lost=0",
                             "records=20 throttled=0 lost=7"),
     "7 samples or records lost"),
    # a sample counted twice by the function it hit
    (profile_lines().replace("self=10 sym=unwind_user_walk",
                             "self=11 sym=unwind_user_walk"),
     "the counts do not add up (41 self, 40 through the walk, 40 walk "
     "samples)"),
    (profile_lines().replace("count_frames=200 count_records=20 missed=0",
                             "count_frames=200 count_records=20 missed=2"),
     "the counting pass's kprobes missed 2 hits"),
    (profile_lines().replace("count_records=20 missed=0 lost=0",
                             "count_records=20 missed=0 lost=4"),
     "the counting pass lost 4 samples or records"),
    (profile_lines().replace(
        "# realstacks-profile: program=sqlite3 build=sframe count_frames="
        "200 count_records=20 missed=0 lost=0\n", ""),
     "no counting pass (count_frames line)"),
    # a walk whose record was lost, or a walk counted that nobody asked for
    (profile_lines().replace("count_frames=200 count_records=20",
                             "count_frames=200 count_records=19"),
     "the counted calls are not the counting pass's walks (20 walks for "
     "19 records, 200 steps for 200 frames)"),
    (profile_lines().replace("calls=200 sym=unwind_user_next",
                             "calls=210 sym=unwind_user_next"),
     "the counted calls are not the counting pass's walks (20 walks for "
     "20 records, 210 steps for 200 frames)"),
])
def test_a_profile_the_judge_cannot_trust_fails(tmp_path, capsys, text,
                                                message):
    res = tmp_path / "results.log"
    res.write_text(text)
    assert overhead.main(["--results", str(res)]) == 1
    assert f"sqlite3 sframe profile: {message}" in capsys.readouterr().out
