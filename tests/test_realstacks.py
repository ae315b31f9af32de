"""make realstacks on the host, without a guest: the comparator
(ci/judge/realstacks/) on logs made by hand (equal, equal through main,
one frame off, cut short, the caller skipped, no record, lost, told apart
by time and arguments; calls entering the kernel in the shim or in
libc), the results channel's format, the table; the shim
(selftests/realstacks/, built by its build-shim.sh with sid's binutils)
preloaded into a program of known stack (tests/data/realstacks/calls.c);
and, with the tree's perf (VMTEST_PERF, else build/out/linux/perf/perf)
where the host lets it record a tracepoint, the shim's truth against the
host kernel's in-place chains, selftests/realstacks/run.sh end to end on
the host's own xz and gzip through busybox alone, and on make
realprograms' builds when they are there. The host kernel has no
deferral: its deferred runs fall back, and the table says so."""
import base64
import io
import json
import os
import re
import shutil
import subprocess
import tarfile

import pytest

from ci.judge.realstacks import cli, compare, perfscript, results, shimlog

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIM_DIR = os.path.join(ROOT, "selftests", "realstacks")
CALLS_C = os.path.join(ROOT, "tests", "data", "realstacks", "calls.c")
PERF = os.environ.get("VMTEST_PERF") or os.path.join(
    ROOT, "build", "out", "linux", "perf", "perf")
SID_BIN = os.path.join(ROOT, "build", "toolchains", "sid", "bin")
REALPROGRAMS = os.path.join(ROOT, "build", "realstacks", "guest")

# A made-up address space: the shim, libc, the program.
SHIM = (0x7000_0000, 0x7000_1000)
LIBC = (0x7100_0000, 0x7120_0000)
MAIN = (0x5500_0000, 0x5501_0000)
SHIM_FRAMES = [0x7000_0100, 0x7000_0200]        # log_call, shim_call
SHIM_ENTRY = [0x7000_0310, 0x7000_0250]         # after shim_syscall's
                                                # syscall, into shim_call
LIBC_IP = 0x7110_0010                           # after libc's syscall
TRUTH = [0x5500_0100, 0x5500_0200, 0x5500_0300,  # caller, ..., main
         0x7100_0400, 0x7100_0500,              # libc's start code
         0x5500_0050]                           # _start
MAIN_RA = 3                                     # main's, into libc
COOKIE = 0x2a160003


def header(pid=100, entry="shim"):
    return "\n".join([
        f"S {pid} {SHIM[0]:x} {SHIM[1]:x} {entry}",
        f"R {pid} write 7110_0000 {LIBC[0]:x} {LIBC[1]:x}".replace("_", ""),
        f"R {pid} read 7110_0100 {LIBC[0]:x} {LIBC[1]:x}".replace("_", ""),
        f"O {pid} {MAIN[0]:x} {MAIN[1]:x} [main]",
        f"O {pid} {SHIM[0]:x} {SHIM[1]:x} /realstacks/shim.so",
        f"O {pid} {LIBC[0]:x} {LIBC[1]:x} /realstacks/lib/libc.so.6",
    ]) + "\n"


def entry(seq, ns, args=(1, 0x7ffd_0000_1000, 8), call="write", pid=100,
          tid=100, truth=TRUTH):
    frames = SHIM_FRAMES + list(truth)
    return (f"E {pid} {tid} {seq} {call} {args[0]:x} {args[1]:x} "
            f"{args[2]:x} {ns} {len(frames)} "
            + " ".join(f"{a:x}" for a in frames) + "\n")


def sample(ns, cookie=None, frames=None, args=(1, 0x7ffd_0000_1000, 8),
           call="write", tid=100):
    """perf script's text of one sample (the guest runner's -F)."""
    out = [f"{tid:8d} {ns // 10**9}.{ns % 10**9:09d}: {call}: "]
    out.append("\t        ffffffff81a00000 do_syscall_64")
    if cookie is not None:
        out.append(f"\t        {cookie:16x} (cookie)")
    for a in frames or []:
        out.append(f"\t    {a:12x} f")
    out.append(f" ABI:2    DX:0x{args[2]:x}    SI:0x{args[1]:x}    "
               f"DI:0x{args[0]:x} ")
    return "\n".join(out) + "\n\n"


def record(ns, cookie, frames, tid=100):
    out = [f"{tid:8d} {ns // 10**9}.{ns % 10**9:09d}: DEFERRED CALLCHAIN "
           f"[cookie: {cookie:x}]"]
    out += [f"\t    {a:12x} f" for a in frames]
    return "\n".join(out) + "\n\n"


def judge(log_text, script_text, mode="deferred"):
    log = shimlog.parse(log_text)
    samples, records, problems = perfscript.parse(script_text)
    assert not problems and not log.problems, (problems, log.problems)
    return compare.compare(log, samples, records, mode)


def only_verdict(res):
    assert len(res.verdicts) == 1, res.verdicts
    return res.verdicts[0]


T0 = 1000 * 10**9


def deferred(kernel, entry_where="shim", truth=TRUTH):
    """The one verdict of a call whose deferred record is kernel."""
    return only_verdict(judge(header(entry=entry_where)
                              + entry(0, T0, truth=truth),
                              sample(T0 + 50, COOKIE)
                              + record(T0 + 90, COOKIE, kernel)))


def test_the_whole_stack_is_equal():
    res = judge(header() + entry(0, T0),
                sample(T0 + 50, COOKIE) + record(T0 + 90, COOKIE,
                                                 SHIM_ENTRY + TRUTH))
    v = only_verdict(res)
    assert (v.outcome, v.through_main) == ("equal", True)
    assert res.other_samples == 0
    assert (res.count("equal"), res.count_through_main()) == (1, 1)


def test_the_shims_own_frames_are_dropped_however_many():
    """The kernel's list starts at the shim's syscall instruction; every
    leading frame in the shim's text is the shim's, the truth follows."""
    for lead in ([SHIM_ENTRY[0]], SHIM_ENTRY, SHIM_ENTRY + [0x7000_0400]):
        assert deferred(lead + TRUTH).outcome == "equal", lead


def test_one_frame_off_is_wrong_at_its_depth():
    bad = list(TRUTH)
    bad[2] += 4
    v = deferred(SHIM_ENTRY + bad)
    assert (v.outcome, v.diagnosis, v.through_main) == \
        ("differs", "wrong from depth 2 (in [main])", False)


def test_a_stack_ending_at_mains_return_address_is_equal_through_main():
    """The frame pointer walk through Debian's __libc_start_call_main
    (argc in %rbp): main's return address into libc is the last frame."""
    v = deferred(SHIM_ENTRY + TRUTH[:MAIN_RA + 1])
    assert (v.outcome, v.diagnosis, v.through_main) == \
        ("differs", "stops 2 frames early (in libc.so.6)", True)


def test_a_stack_ending_before_mains_return_address_is_not():
    v = deferred(SHIM_ENTRY + TRUTH[:MAIN_RA])
    assert (v.outcome, v.diagnosis, v.through_main) == \
        ("differs", "stops 3 frames early (in libc.so.6)", False)


def test_frames_after_mains_return_address_do_not_count_through_main():
    """Equal through main asks nothing of the frames past main's return
    address: wrong, missing or added, it holds."""
    wrong_start = SHIM_ENTRY + TRUTH[:MAIN_RA + 1] + [0x7100_0999, 0x1234]
    v = deferred(wrong_start)
    assert (v.diagnosis, v.through_main) == \
        ("wrong from depth 4 (in libc.so.6)", True)
    v = deferred(SHIM_ENTRY + TRUTH + [0x1234])
    assert (v.outcome, v.diagnosis, v.through_main) == \
        ("differs", "1 frame past the end", True)


def test_a_thread_is_equal_through_its_start_routine():
    """A thread's truth ends in libc (start_thread, clone3): its start
    routine's return address into start_thread is the frame."""
    thread = TRUTH[:3] + [0x7100_0600, 0x7100_0700]
    v = deferred(SHIM_ENTRY + thread[:4], truth=thread)
    assert (v.diagnosis, v.through_main) == \
        ("stops 1 frame early (in libc.so.6)", True)
    v = deferred(SHIM_ENTRY + thread[:3], truth=thread)
    assert v.through_main is False


@pytest.mark.parametrize("truth, depth", [
    # the main thread: program, main's return into libc, libc, _start
    (TRUTH, MAIN_RA),
    # a thread: program, the start routine's return into libc, libc
    (TRUTH[:3] + [0x7100_0600, 0x7100_0700], 3),
    # a callback from libc in the middle (qsort): the tail counts, only
    ([0x5500_0100, 0x7100_0800, 0x5500_0200] + TRUTH[3:], 3),
    # no libc at the end (a truth cut short): the whole truth
    (TRUTH[:3], 2),
    ([0x5500_0100, 0x7100_0800, 0x7000_0050], 2),
    # ... unless the last is the program's (_start's) after libc's
    ([0x5500_0100, 0x7100_0800, 0x5500_0200], 1),
    # libc's frames at the end, no _start after them
    ([0x5500_0100, 0x7100_0800], 1),
])
def test_mains_return_address_in_the_truth(truth, depth):
    proc = shimlog.parse(header()).process(100)
    assert compare.main_depth(truth, proc) == depth


def test_a_stack_cut_short_stops_early():
    v = deferred(SHIM_ENTRY + TRUTH[:4])
    assert (v.outcome, v.diagnosis) == \
        ("differs", "stops 2 frames early (in libc.so.6)")


def test_frames_past_the_truth_are_a_difference():
    v = deferred(SHIM_ENTRY + TRUTH + [0x1234])
    assert (v.outcome, v.diagnosis) == ("differs", "1 frame past the end")


def test_the_frame_pointer_walk_from_a_frameless_wrapper():
    """libc's syscall wrapper keeps no frame (REALSTACKS_MODE=libc): a
    frame pointer step from it reads the caller's caller, and Debian's
    __libc_start_main keeps argc in %rbp, which ends the walk at main's
    return address. Not equal through main: the caller is missing."""
    v = only_verdict(judge(
        header(entry="libc") + entry(0, T0),
        sample(T0 + 50, frames=[LIBC_IP] + TRUTH[1:4]), mode="in place"))
    assert (v.outcome, v.diagnosis, v.through_main) == \
        ("differs", "caller skipped, stops 2 frames early (in libc.so.6)",
         False)


def test_the_caller_skipped_from_the_shim_too():
    v = deferred(SHIM_ENTRY[:1] + TRUTH[1:])
    assert (v.diagnosis, v.through_main) == ("caller skipped", False)


def test_nothing_above_the_entry():
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, frames=SHIM_ENTRY),
                           mode="in place"))
    assert (v.diagnosis, v.through_main) == ("nothing above the shim", False)
    v = only_verdict(judge(header(entry="libc") + entry(0, T0),
                           sample(T0 + 50, frames=[LIBC_IP]),
                           mode="in place"))
    assert v.diagnosis == "nothing above libc's wrapper"


def test_a_record_that_never_came():
    v = only_verdict(judge(header() + entry(0, T0), sample(T0 + 50, COOKIE)))
    assert v.outcome == "no record"


def test_a_lost_entry_fails_the_run():
    res = judge(header() + entry(0, T0), "")
    assert only_verdict(res).outcome == "no sample"
    run = results.Run("xz", "fp", "shim", "deferred", "write", 0, 0, "ok",
                      files={"shim.log": header() + entry(0, T0),
                             "script.txt": ""})
    parsed = results.Results(start={}, end={"runs": 1}, runs=[run])
    _, problems, _ = cli.summarize(parsed, guest=True)
    assert any("no sample" in p for p in problems), problems


def test_a_sample_in_place_in_a_deferred_run():
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, frames=SHIM_ENTRY + TRUTH)))
    assert (v.outcome, v.through_main) == ("in place", False)


def test_a_stack_that_does_not_start_at_the_entry():
    """Calls entering in the shim: a list starting in libc (or in the
    program) is not the entry's; calls entering through libc: one
    starting in the shim is not."""
    assert deferred(TRUTH).outcome == "not at entry"
    assert deferred([LIBC_IP] + TRUTH).outcome == "not at entry"
    assert deferred(SHIM_ENTRY + TRUTH, entry_where="libc").outcome == \
        "not at entry"
    assert deferred([LIBC_IP] + TRUTH, entry_where="libc").outcome == "equal"


def test_a_shim_that_does_not_say_where_calls_enter_is_a_problem():
    log = shimlog.parse(header().replace(" shim\n", "\n", 1))
    assert log.problems and "unknown line" in log.problems[0]
    log = shimlog.parse(header(entry="kernel"))
    assert log.problems


def test_entries_the_shim_did_not_make_are_left_over():
    """libc's own writes (stdio's) reach the kernel without the shim:
    other arguments, or before the call's timestamp, they are no call's."""
    script = (sample(T0 - 10, COOKIE + 1)            # before the call
              + sample(T0 + 20, COOKIE + 2, args=(1, 0x4000, 8))
              + sample(T0 + 40, COOKIE + 3, call="read")
              + sample(T0 + 50, COOKIE)
              + record(T0 + 90, COOKIE, SHIM_ENTRY + TRUTH))
    res = judge(header() + entry(0, T0), script)
    assert only_verdict(res).outcome == "equal"
    assert res.other_samples == 3


def test_calls_with_the_same_arguments_are_told_apart_by_time():
    """gzip writes the same buffer, the same length, over and over: each
    call takes the first matching sample after its own timestamp and
    before the thread's next call."""
    other = list(TRUTH)
    other[0] += 8
    log = header() + entry(0, T0) + entry(1, T0 + 1000, truth=other)
    script = (sample(T0 + 50, COOKIE)
              + record(T0 + 90, COOKIE, SHIM_ENTRY + TRUTH)
              + sample(T0 + 1050, COOKIE + 4)
              + record(T0 + 1090, COOKIE + 4, SHIM_ENTRY + other))
    res = judge(log, script)
    assert [v.outcome for v in res.verdicts] == ["equal", "equal"]
    # Swapped records: each call gets its own entry's stack, not the other's
    script = (sample(T0 + 50, COOKIE)
              + record(T0 + 90, COOKIE, SHIM_ENTRY + other)
              + sample(T0 + 1050, COOKIE + 4)
              + record(T0 + 1090, COOKIE + 4, SHIM_ENTRY + TRUTH))
    res = judge(log, script)
    assert [v.outcome for v in res.verdicts] == ["differs", "differs"]


def test_a_lost_entry_does_not_take_the_next_calls():
    """A call whose entry was lost: the thread's next call's sample is not
    its (the window ends at the next call's timestamp)."""
    log = header() + entry(0, T0) + entry(1, T0 + 1000)
    res = judge(log, sample(T0 + 1050, COOKIE)
                + record(T0 + 1090, COOKIE, SHIM_ENTRY + TRUTH))
    assert [v.outcome for v in res.verdicts] == ["no sample", "equal"]


def test_libcs_own_frames_before_the_caller_are_its_own():
    """Through libc: a wrapper that enters the kernel from a function it
    calls (glibc 2.41's __syscall_cancel_arch): every leading frame in
    libc is the wrapper's, the truth starts after them."""
    v = deferred([LIBC_IP, LIBC_IP + 0x300, LIBC_IP + 0x500] + TRUTH,
                 entry_where="libc")
    assert v.outcome == "equal"


def test_the_fd_is_an_int():
    """A caller passes an int in %edi: the upper half of %rdi is not its."""
    v = only_verdict(judge(header() + entry(0, T0, args=(0x5_0000_0001, 0x1000, 8)),
                           sample(T0 + 50, COOKIE, args=(1, 0x1000, 8))
                           + record(T0 + 90, COOKIE, SHIM_ENTRY + TRUTH)))
    assert v.outcome == "equal"
    v = only_verdict(judge(header() + entry(0, T0, args=(1, 0x1000, 8)),
                           sample(T0 + 50, COOKIE, args=(1, 0x1000, 9))))
    assert v.outcome == "no sample"


def test_a_forked_child_has_its_parents_address_space():
    log = (header() + "F 101 100\n"
           + entry(0, T0, pid=101, tid=101))
    res = judge(log, sample(T0 + 50, COOKIE, tid=101)
                + record(T0 + 90, COOKIE, SHIM_ENTRY + TRUTH, tid=101))
    assert only_verdict(res).outcome == "equal"


def test_a_shim_log_cut_short_is_a_problem():
    text = header() + entry(0, T0)
    log = shimlog.parse(text[:-20])
    assert log.problems and "frames announced" in log.problems[0]
    assert not log.entries


def run_data(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text if isinstance(text, bytes) else text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    b64 = base64.encodebytes(buf.getvalue()).decode()
    return b64


def results_text(runs, end=None):
    """A results log as selftests/realstacks/run.sh prints it; runs are
    (program, build, mode, check, files) or (..., files, entry)."""
    out = ["# realstacks-start: kernel=6.12.0 plan=all:all:shim rows=1",
           "# realstacks-perf: perf version 6.12"]
    for prog, build, mode, check, files, *where in runs:
        where = where[0] if where else "shim"
        name = f"{prog}-{build}-{where}-{mode}"
        out.append(f"# realstacks-run: program={prog} build={build} "
                   f"entry={where} mode={mode} calls=read,write record=0 "
                   f"script=0 check={check}")
        out.append(f"# realstacks-data: {name}")
        out.append(run_data(files).rstrip("\n"))
        out.append(f"# realstacks-data-end: {name}")
    out.append(f"# realstacks-end: runs={len(runs) if end is None else end}")
    return "\n".join(out) + "\n"


GOOD = {"shim.log": header() + entry(0, T0),
        "script.txt": sample(T0 + 50, COOKIE)
        + record(T0 + 90, COOKIE, SHIM_ENTRY + TRUTH),
        "record.err": "", "script.err": ""}
# The fp build in place: from the shim to main's return address
IN_PLACE = dict(GOOD, **{"script.txt": sample(T0 + 50, frames=SHIM_ENTRY
                                              + TRUTH[:MAIN_RA + 1])})
# Through libc's frameless wrapper: the caller skipped
LIBC_GOOD = dict(GOOD, **{"shim.log": header(entry="libc") + entry(0, T0),
                          "script.txt": sample(T0 + 50, COOKIE)
                          + record(T0 + 90, COOKIE, [LIBC_IP] + TRUTH)})
LIBC_IN_PLACE = dict(LIBC_GOOD, **{"script.txt": sample(
    T0 + 50, frames=[LIBC_IP] + TRUTH[1:MAIN_RA + 1])})


def test_the_table_from_a_results_log(tmp_path, capsys):
    """One row per program, build and entry: the calls, then equal whole
    and equal through main, deferred and in place (count and share);
    the shim's rows first."""
    text = results_text([("xz", "fp", "deferred", "ok", LIBC_GOOD, "libc"),
                         ("xz", "fp", "inplace", "ok", LIBC_IN_PLACE, "libc"),
                         ("xz", "fp", "deferred", "ok", GOOD),
                         ("xz", "fp", "inplace", "ok", IN_PLACE)])
    path = tmp_path / "results.log"
    path.write_text(text)
    assert cli.main(["--results", str(path)]) == 0
    out = capsys.readouterr().out
    rows = [l for l in out.splitlines() if l.startswith("xz")]
    assert len(rows) == 2, out
    assert re.search(r"^xz\s+fp\s+shim\s+1\s+1 \(100\.0 %\)\s+1 \(100\.0 %\)"
                     r"\s+0 \(0\.0 %\)\s+1 \(100\.0 %\)\s*$", rows[0]), rows
    assert re.search(r"^xz\s+fp\s+libc\s+1\s+1 \(100\.0 %\)\s+1 \(100\.0 %\)"
                     r"\s+0 \(0\.0 %\)\s+0 \(0\.0 %\)\s*$", rows[1]), rows
    md = (tmp_path / "table.md").read_text()
    assert "| program | build | entry | calls | deferred: whole | " \
        "deferred: through main | in place: whole | in place: through main |" in md
    assert "| xz | fp | shim | 1 | 1 (100.0 %) | 1 (100.0 %) | 0 (0.0 %) | " \
        "1 (100.0 %) |" in md, md
    details = (tmp_path / "details.txt").read_text()
    assert "== xz-fp-shim-inplace: 1 calls (read,write), 0 entries not " \
        "through the shim\n   equal through main: 1\n" in details, details
    assert "caller skipped, stops 2 frames early (in libc.so.6): 1" in details
    summary = json.loads((tmp_path / "summary.json").read_text())
    shim_row = next(r for r in summary["rows"] if r["entry"] == "shim")
    assert (shim_row["inplace"]["equal"],
            shim_row["inplace"]["through_main"]) == (0, 1)


def test_a_runs_recording_is_kept_beside_its_truth(tmp_path):
    """A run whose data holds its perf.data (the plan word "data") has it
    written byte for byte to data/NAME/, with its shim log; a run without
    leaves no data directory."""
    blob = bytes(range(256)) * 4  # not text: kept as bytes
    text = results_text([("gzip", "sframe", "deferred", "ok",
                          dict(GOOD, **{"perf.data": blob,
                                        "sampled.data": blob[::-1]})),
                         ("gzip", "sframe", "inplace", "ok", IN_PLACE)])
    (tmp_path / "results.log").write_text(text)
    assert cli.main(["--results", str(tmp_path / "results.log")]) == 0
    kept = tmp_path / "data" / "gzip-sframe-shim-deferred"
    assert (kept / "perf.data").read_bytes() == blob
    assert (kept / "sampled.data").read_bytes() == blob[::-1]
    assert (kept / "shim.log").read_text() == GOOD["shim.log"]
    assert [d.name for d in (tmp_path / "data").iterdir()] == [kept.name]


def test_a_whole_run_writes_its_table_into_the_doc_and_only_a_whole_one(
        tmp_path, capsys):
    """doc/realstacks.md's table is make realstacks' own: a run of every
    program, build and entry replaces what is between the markers (and
    nothing else); a run of fewer rows leaves the doc as it was."""
    doc = tmp_path / "realstacks.md"
    before = f"# t\n\n{cli.DOC_BEGIN}\nold table\n{cli.DOC_END}\n\nafter\n"
    doc.write_text(before)
    part = [("xz", "fp", "deferred", "ok", GOOD),
            ("xz", "fp", "inplace", "ok", IN_PLACE)]
    path = tmp_path / "results.log"
    path.write_text(results_text(part))
    assert cli.main(["--results", str(path), "--doc", str(doc)]) == 0
    assert doc.read_text() == before
    whole = [(p, b, m, "ok", runs, e)
             for p in cli.PROGRAMS for b in cli.BUILD_ORDER
             for e, runs in (("shim", {"deferred": GOOD, "inplace": IN_PLACE}),
                             ("libc", {"deferred": LIBC_GOOD,
                                       "inplace": LIBC_IN_PLACE}))
             for m in ("deferred", "inplace")]
    whole = [(p, b, m, ok, runs[m], e) for p, b, m, ok, runs, e in whole]
    path.write_text(results_text(whole))
    assert cli.main(["--results", str(path), "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith(f"# t\n\n{cli.DOC_BEGIN}\n") and \
        text.endswith(f"{cli.DOC_END}\n\nafter\n") and "old table" not in text
    rows = [l for l in text.splitlines() if re.match(r"\| (xz|gzip|sqlite3) ", l)]
    assert len(rows) == 18, text
    assert "| sqlite3 | sframe | shim | 1 | 1 (100.0 %) |" in text, text
    doc.write_text("# no markers\n")
    with pytest.raises(ValueError):
        cli.main(["--results", str(path), "--doc", str(doc)])


@pytest.mark.parametrize("n, total, cell", [
    (0, 7, "0 (0.0 %)"), (7, 7, "7 (100.0 %)"), (1999, 2000, "1999 (99.9 %)"),
    (1, 2000, "1 (<0.1 %)"), (1, 3, "1 (33.3 %)"), (0, 0, "-")])
def test_a_share_is_never_rounded_to_all_or_none(n, total, cell):
    assert cli.pct(n, total) == cell


@pytest.mark.parametrize("edit, why", [
    (lambda t: t.replace("check=ok", "check=wrong-output", 1),
     "the workload's output is wrong-output"),
    (lambda t: t.replace("record=0", "record=1", 1),
     "perf record exited 1"),
    (lambda t: t.replace("runs=2", "runs=3"), "realstacks-end says 3 runs"),
    (lambda t: t[:t.index("# realstacks-data-end: xz-fp-shim-inplace")],
     "never ended"),
    (lambda t: re.sub(r"(# realstacks-data: xz-fp-shim-deferred\n)\S+",
                      r"\1AAAA", t), "does not unpack"),
    (lambda t: t.replace("entry=shim mode=inplace", "entry=libc mode=inplace")
     .replace("xz-fp-shim-inplace", "xz-fp-libc-inplace"),
     "the shim's calls entered the kernel at shim, the run says libc"),
])
def test_a_run_that_cannot_be_trusted_fails(tmp_path, capsys, edit, why):
    text = results_text([("xz", "fp", "deferred", "ok", GOOD),
                         ("xz", "fp", "inplace", "ok", IN_PLACE)])
    path = tmp_path / "results.log"
    path.write_text(edit(text))
    assert cli.main(["--results", str(path)]) == 1
    assert why in capsys.readouterr().out


def test_a_guest_whose_kernel_refused_deferral_fails():
    run = results.Run("xz", "fp", "shim", "deferred", "write", 0, 0, "ok",
                      files=dict(GOOD, **{"record.err": "kernel does not "
                                          "support deferred callchains, "
                                          "falling back to unwinding user "
                                          "stacks in the sampling context"}))
    parsed = results.Results(start={}, end={"runs": 1}, runs=[run])
    rows, problems, _ = cli.summarize(parsed, guest=True)
    assert any("refused deferral" in p for p in problems), problems
    _, problems, _ = cli.summarize(parsed, guest=False)
    assert not problems
    assert "perf fell back" in cli.table(rows)


def test_sqlite_outputs_must_agree():
    runs = [results.Run("sqlite3", b, "shim", "inplace", "write", 0, 0,
                        f"md5={m}", files=IN_PLACE)
            for b, m in (("deb", "aa"), ("fp", "bb"))]
    parsed = results.Results(start={}, end={"runs": 2}, runs=runs)
    _, problems, _ = cli.summarize(parsed, guest=False)
    assert any("differs between runs" in p for p in problems), problems


# The shim, preloaded into a program of known stack on the host.

def build_shim(out, bin_dir=SID_BIN, cc=None):
    env = dict(os.environ, **({"CC": cc} if cc else {}))
    return subprocess.run(["sh", os.path.join(SHIM_DIR, "build-shim.sh"),
                           str(out), bin_dir], capture_output=True, text=True,
                          env=env)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not os.access(os.path.join(SID_BIN, "as"), os.X_OK):
        pytest.skip(f"no sid binutils at {SID_BIN} (make toolchains)")
    d = tmp_path_factory.mktemp("realstacks")
    shim = d / "shim.so"
    p = build_shim(shim)
    assert p.returncode == 0, p.stderr
    calls = d / "calls"
    subprocess.run(["gcc", "-O2", "-D_FORTIFY_SOURCE=2",
                    "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
                    "-pthread", "-o", str(calls), CALLS_C], check=True)
    return d, shim, calls


def symbols(binary):
    """name -> (start, end) of binary's functions (file addresses)."""
    out = subprocess.run(["nm", "-S", "--defined-only", str(binary)],
                         capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        w = line.split()
        if len(w) == 4 and w[2] in "tT":
            start = int(w[0], 16)
            syms[w[3]] = (start, start + int(w[1], 16))
    return syms


def exec_vaddr(binary):
    """The file address of binary's executable PT_LOAD."""
    out = subprocess.run(["readelf", "-lW", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        w = line.split()
        if w and w[0] == "LOAD" and "E" in w[6:-1]:
            return int(w[2], 16)
    raise AssertionError(f"{binary}: no executable PT_LOAD")


def disassembly(binary):
    """function -> its instructions (objdump's text, spaces squeezed)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                         capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            cur = funcs.setdefault(m[1], [])
        elif cur is not None and re.match(r"^\s*[0-9a-f]+:\t", line):
            cur.append(" ".join(line.split("\t", 1)[1].split()))
    return funcs


def sid_readelf(*args):
    """Debian sid's readelf (it reads SFrame version 3), or None."""
    root = os.path.join(ROOT, "build", "toolchains", "sid", "root")
    lib = os.path.join(root, "usr", "lib", "x86_64-linux-gnu")
    exe = os.path.join(root, "usr", "bin", "x86_64-linux-gnu-readelf")
    if not os.path.exists(exe):
        return None
    return subprocess.run(
        [os.path.join(lib, "ld-linux-x86-64.so.2"), "--library-path",
         f"{lib}:{os.path.join(root, 'lib', 'x86_64-linux-gnu')}", exe, *args],
        capture_output=True, text=True, check=True).stdout


def test_the_shim_is_never_the_weak_frame(built):
    """The built shim: a PT_GNU_SFRAME segment, one syscall instruction,
    in shim_syscall, which like its caller shim_call starts by making
    its frame; with sid's readelf, an SFrame entry for each of them."""
    shim = built[1]
    phdrs = subprocess.run(["readelf", "-lW", str(shim)], capture_output=True,
                           text=True, check=True).stdout
    assert "GNU_SFRAME" in phdrs
    funcs = disassembly(shim)
    holders = [f for f, ins in funcs.items() if "syscall" in ins]
    assert holders == ["shim_syscall"]
    assert sum(ins.count("syscall") for ins in funcs.values()) == 1
    for f in ("shim_syscall", "shim_call"):
        assert funcs[f][:2] == ["push %rbp", "mov %rsp,%rbp"], (f, funcs[f][:4])
    sframe = sid_readelf("--sframe", str(shim))
    if sframe is None:
        return
    starts = {int(a, 16) for a in re.findall(r"func idx \[\d+\]: pc = "
                                             r"0x([0-9a-f]+)", sframe)}
    syms = symbols(shim)
    for f in ("shim_syscall", "shim_call", "write", "pread64"):
        assert syms[f][0] in starts, f


def test_build_shim_refuses_a_weak_shim(tmp_path):
    """build-shim.sh's own checks: a shim_call without its frame (the
    compiler told to omit frame pointers last), a shim without .sframe
    (an as that drops --gsframe), binutils that are not there."""
    if not os.access(os.path.join(SID_BIN, "as"), os.X_OK):
        pytest.skip(f"no sid binutils at {SID_BIN} (make toolchains)")
    nofp = tmp_path / "cc-nofp"
    nofp.write_text('#!/bin/sh\nexec gcc "$@" -fomit-frame-pointer\n')
    nofp.chmod(0o755)
    p = build_shim(tmp_path / "a.so", cc=str(nofp))
    assert p.returncode == 1 and "shim_call starts push %r" in p.stderr, p.stderr
    assert not (tmp_path / "a.so").exists()
    bad = tmp_path / "bin"
    bad.mkdir()
    (bad / "as").write_text('#!/bin/sh\nfor a; do shift; [ "$a" = --gsframe ] '
                            '|| set -- "$@" "$a"; done\n'
                            f'exec {SID_BIN}/as "$@"\n')
    (bad / "as").chmod(0o755)
    os.symlink(os.path.join(SID_BIN, "ld"), bad / "ld")
    p = build_shim(tmp_path / "b.so", bin_dir=str(bad))
    assert p.returncode == 1 and "no PT_GNU_SFRAME segment" in p.stderr, p.stderr
    p = build_shim(tmp_path / "c.so", bin_dir=str(tmp_path))
    assert p.returncode == 1 and "no as and ld" in p.stderr, p.stderr


def run_calls(built, tmp_path, rounds=3, env=None, preload=None):
    d, shim, calls = built
    log = tmp_path / "shim.log"
    p = subprocess.run([str(calls), str(rounds)], capture_output=True,
                       text=True, env=dict(os.environ,
                                           LD_PRELOAD=preload or str(shim),
                                           REALSTACKS_LOG=str(log),
                                           **(env or {})))
    assert p.returncode == 0, p.stderr
    return p, shimlog.parse(log.read_text())


@pytest.mark.parametrize("where", ["shim", "libc"])
def test_the_shim_logs_every_call_with_its_stack(built, tmp_path, where):
    p, log = run_calls(built, tmp_path, env={"REALSTACKS_MODE": where})
    assert not log.problems
    want = int(p.stdout.split()[1])
    assert len(log.entries) == want, p.stdout
    calls = {}
    for e in log.entries:
        calls[e.call] = calls.get(e.call, 0) + 1
    # 3 tasks x (3 rounds + 1 failing) (read is __read_chk, pread64
    # __pread64_chk: fortified, size known)
    assert calls == {"write": 12, "read": 12, "pread64": 12, "pwrite64": 9}
    syms = symbols(built[2])
    tids = {e.tid for e in log.entries}
    pids = {e.pid for e in log.entries}
    assert len(tids) == 3 and len(pids) == 2, (tids, pids)
    assert len({e.seq for e in log.entries if e.pid == min(pids)}) == 30

    def inside(addr, func, bias):
        """addr is a return address into func (after its first byte)."""
        lo, hi = syms[func]
        return lo < addr - bias <= hi

    for e in log.entries:
        proc = log.process(e.pid)
        assert proc is not None and proc.shim and proc.entry == where, e
        assert proc.in_shim(e.frames[0]), e
        truth = compare.truth_of(e, proc)
        assert truth, e
        lo, _, path = proc.main_object()
        assert path == "[main]"
        bias = lo - exec_vaddr(built[2])
        # The return addresses into calls(), level2() and level1()
        assert [inside(a, f, bias) for a, f in
                zip(truth, ("calls", "level2", "level1"))] == [True] * 3, e
        if e.tid == e.pid:
            # out to _start, through main and libc's start code
            assert inside(truth[3], "main", bias), e
            assert inside(truth[-1], "_start", bias), e
            assert [proc.object_of(a) for a in truth[4:-1]] == \
                ["libc.so.6", "libc.so.6"], e
            # main's return address into libc: equal through main's end
            assert compare.main_depth(truth, proc) == 4, e
        else:
            # a thread: thread(), then libc's start_thread and clone3
            assert compare.main_depth(truth, proc) == 4, e
            assert [proc.object_of(a) for a in truth[4:]] == \
                ["libc.so.6", "libc.so.6"], e
    # The forked child said who its parent is
    child = max(pids)
    assert log.parents == {child: min(pids)}


def tailcheck(built, tmp_path):
    check = tmp_path / "tailcheck.so"
    subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-o", str(check),
                    os.path.join(os.path.dirname(CALLS_C), "tailcheck.c")],
                   check=True)
    return f"{built[1]} {check}"


def test_the_shim_enters_the_kernel_itself(built, tmp_path):
    """Preloaded after the shim, tailcheck.so's write() stands for libc's:
    the shim's own entry never reaches it (and calls.c's checks of what
    each call returns, errors included, held: run_calls asserts exit 0)."""
    p, _ = run_calls(built, tmp_path, preload=tailcheck(built, tmp_path))
    counts = re.findall(r"tailcheck: (\d+) writes, (\d+) returning into "
                        r"the shim", p.stderr)
    assert counts == [("0", "0")], p.stderr


def test_the_stubs_jump_to_libc_as_a_tail_call(built, tmp_path):
    """REALSTACKS_MODE=libc: the stubs jump to tailcheck.so's write();
    its return address must be the program's, not the shim's."""
    p, _ = run_calls(built, tmp_path, preload=tailcheck(built, tmp_path),
                     env={"REALSTACKS_MODE": "libc"})
    # 2 threads x 5 writes through the shim (printf's write is libc's
    # own; the child's _exit() runs no destructor)
    counts = re.findall(r"tailcheck: (\d+) writes, (\d+) returning into "
                        r"the shim", p.stderr)
    assert counts == [("8", "0")], p.stderr


def test_a_mode_the_shim_does_not_know_is_refused(built, tmp_path):
    d, shim, calls = built
    p = subprocess.run([str(calls), "1"], capture_output=True, env=dict(
        os.environ, LD_PRELOAD=str(shim), REALSTACKS_MODE="kernel",
        REALSTACKS_LOG=str(tmp_path / "log")))
    assert p.returncode == -6


def test_the_shim_logs_only_the_calls_asked_for(built, tmp_path):
    _, log = run_calls(built, tmp_path, env={"REALSTACKS_CALLS": "pread64,write"})
    assert {e.call for e in log.entries} == {"pread64", "write"}


def test_the_shim_knows_where_libc_is(built, tmp_path):
    _, log = run_calls(built, tmp_path, rounds=1)
    proc = log.process(min(e.pid for e in log.entries))
    assert set(proc.real) == {"write", "read", "__read_chk", "pread",
                              "pread64", "__pread64_chk", "pwrite",
                              "pwrite64"}
    libc = [o for o in proc.objects if os.path.basename(o[2]) == "libc.so.6"]
    assert proc.libc() == [(libc[0][0], libc[0][1])]
    assert all(proc.in_libc(a) for a, _, _ in proc.real.values())


# With perf: the host kernel's in-place chains (it has no deferral).

def perf_works(tmp_path):
    if not os.access(PERF, os.X_OK):
        return f"no perf of the tree at {PERF} (make perf, or VMTEST_PERF)"
    tid = "/sys/kernel/tracing/events/syscalls/sys_enter_write/id"
    if not os.path.exists(tid) and os.geteuid() == 0 and \
            os.path.isdir("/sys/kernel/tracing") and \
            not os.listdir("/sys/kernel/tracing"):
        # A new machine boots with tracefs unmounted (seen 2026-11-30):
        # root mounts it where the kernel provides the mount point
        try:
            subprocess.run(["mount", "-t", "tracefs", "nodev",
                            "/sys/kernel/tracing"], capture_output=True)
        except OSError:
            pass
    if not os.path.exists(tid):
        return f"no {tid}"
    p = subprocess.run([PERF, "record", "-q", "-o", str(tmp_path / "probe.data"),
                        "-e", f"tracepoint/config={open(tid).read().strip()}/",
                        "-c", "1", "--", "/bin/true"], capture_output=True,
                       text=True)
    if p.returncode:
        return f"perf record of a tracepoint fails here: {p.stderr.strip()[:200]}"
    return None


@pytest.fixture
def perf_ok(tmp_path):
    why = perf_works(tmp_path)
    if why:
        pytest.skip(why)


def record_calls(built, tmp_path, name, shim=True, where="shim"):
    d, shim_so, calls = built
    wid = open("/sys/kernel/tracing/events/syscalls/sys_enter_write/id").read().strip()
    data = tmp_path / f"{name}.data"
    env = dict(os.environ, REALSTACKS_LOG=str(tmp_path / f"{name}.log"),
               REALSTACKS_CALLS="write", REALSTACKS_MODE=where)
    if shim:
        env["LD_PRELOAD"] = str(shim_so)
    p = subprocess.run([PERF, "record", "-q", "-k", "monotonic",
                        "-e", f"tracepoint/config={wid},name=write/", "-c", "1",
                        "--call-graph", "fp", "--user-callchain",
                        "--user-regs=di,si,dx", "-o", str(data), "--",
                        str(calls), "3"], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stderr
    s = subprocess.run([PERF, "script", "-i", str(data), "-F",
                        "tid,time,event,ip,sym,symoff,dso,uregs", "--ns"],
                       capture_output=True, text=True, check=True)
    return s.stdout


def chains(text):
    """Each sample's frames as "sym+off (dso)", without addresses."""
    out = []
    for line in text.splitlines():
        if line.startswith("\t"):
            out[-1].append(line.split(None, 1)[1])
        elif line.strip() and not line.lstrip().startswith("ABI:"):
            out.append([])
    return sorted(tuple(c) for c in out)


def test_the_kernels_chain_starts_at_the_shims_syscall(built, tmp_path,
                                                        perf_ok):
    """The shim's own entry: each write's chain (the host's in-place
    frame pointer walk) is shim_syscall, shim_call, then calls(), the
    program's function that called write; printf's write is libc's."""
    frames = [[f.split("+")[0] for f in c]
              for c in chains(record_calls(built, tmp_path, "entry"))]
    shims = [c for c in frames if "shim_syscall" in c]
    assert len(shims) == 12 and len(frames) == 13, frames
    for c in shims:
        user = c[c.index("shim_syscall"):]
        assert user[:5] == ["shim_syscall", "shim_call", "calls", "level2",
                            "level1"], c


def test_the_stack_at_the_entry_is_the_one_without_the_shim(built, tmp_path,
                                                             perf_ok):
    """REALSTACKS_MODE=libc, the stub's tail jump: the kernel sees, at
    libc's system call, the program's stack as it is without the shim
    (the same functions and offsets: where the objects are mapped may
    differ)."""
    with_shim = chains(record_calls(built, tmp_path, "with", where="libc"))
    without = chains(record_calls(built, tmp_path, "without", shim=False))
    assert with_shim == without
    # 12 writes of calls() (calls() itself skipped: libc's wrapper keeps
    # no frame), and printf's
    assert len(with_shim) == 13
    assert sum("level2+" in " ".join(c) for c in with_shim) == 12, with_shim


@pytest.mark.parametrize("where, diagnosis, through_main", [
    # the shim keeps a frame: the caller is there, the walk ends at
    # main's return address (Debian's __libc_start_call_main keeps argc
    # in %rbp); a thread's at its start routine's (start_thread's %rbp)
    ("shim", "stops 2 frames early (in libc.so.6)", True),
    # libc's wrapper keeps none: the caller is skipped
    ("libc", "caller skipped, stops 2 frames early (in libc.so.6)", False),
])
def test_the_truth_against_the_hosts_in_place_chains(built, tmp_path, perf_ok,
                                                      where, diagnosis,
                                                      through_main):
    """Every write of calls.c (built with frame pointers) in each of its
    three tasks, against the host's in-place frame pointer walk."""
    text = record_calls(built, tmp_path, "inplace", where=where)
    log = shimlog.parse((tmp_path / "inplace.log").read_text())
    samples, records, problems = perfscript.parse(text)
    assert not problems
    res = compare.compare(log, samples, records, "in place")
    assert res.count("no sample") == 0
    assert res.entries == 12
    main = [v for v in res.verdicts if v.entry.tid == v.entry.pid]
    assert len(main) == 8
    assert {v.diagnosis for v in main} == {diagnosis}
    assert {v.through_main for v in res.verdicts} == {through_main}


APPLETS = re.compile(r"for app in (.*?); do", re.S)


def realstacks_tree(built, rs, builds):
    """A make realprograms-like tree at rs: the shim just built, run.sh
    and the inputs from the source; builds maps a build to its programs'
    dir; lib/ holds the host's or make realprograms' libraries."""
    rs.mkdir(parents=True, exist_ok=True)
    for b, src in builds.items():
        os.symlink(src, rs / b)
    shutil.copy(built[1], rs / "shim.so")
    shutil.copy(os.path.join(SHIM_DIR, "run.sh"), rs / "run.sh")
    subprocess.run(["/usr/bin/python3", os.path.join(SHIM_DIR, "inputs.py"),
                    str(rs / "input")], check=True)


def test_the_runner_end_to_end_on_the_host(built, tmp_path, perf_ok):
    """selftests/realstacks/run.sh on the host's own xz and gzip (as
    deb/), with only busybox and the applets the guest's initramfs links
    on its PATH, then the comparator on its output; gzip through libc's
    wrappers too."""
    for tool in ("busybox", "xz", "gzip"):
        if not shutil.which(tool):
            pytest.skip(f"no {tool} on the host")
    rs = tmp_path / "rs"
    (tmp_path / "deb").mkdir()
    for prog in ("xz", "gzip"):
        os.symlink(shutil.which(prog), tmp_path / "deb" / prog)
    realstacks_tree(built, rs, {"deb": tmp_path / "deb"})
    (rs / "lib").mkdir()
    ldd = subprocess.run(["ldd", shutil.which("xz"), str(built[1])],
                         capture_output=True, text=True, check=True).stdout
    for path in re.findall(r"(/\S+\.so[.\d]*)", ldd):
        name = os.path.basename(path)
        if not (rs / "lib" / name).exists():
            os.symlink(os.path.realpath(path), rs / "lib" / name)
    if not (rs / "lib" / "ld-linux-x86-64.so.2").exists():
        pytest.skip("no ld-linux-x86-64.so.2 in ldd's output")
    # The guest's PATH: busybox and its applets as mkinitramfs.sh links them
    bindir = tmp_path / "bin"
    bindir.mkdir()
    bb = shutil.which("busybox")
    os.symlink(bb, bindir / "busybox")
    with open(os.path.join(ROOT, "ci", "guest", "mkinitramfs.sh")) as f:
        applets = APPLETS.search(f.read()).group(1).replace("\\\n", " ").split()
    for app in applets:
        os.symlink(bb, bindir / app)
    out = tmp_path / "results.log"
    env = {"PATH": str(bindir), "RS": str(rs), "PERF": PERF,
           "W": str(tmp_path / "w")}
    with open(out, "w") as f:
        p = subprocess.run([str(bindir / "sh"), str(rs / "run.sh"),
                            "xz:deb,gzip:deb:all"], stdout=f,
                           stderr=subprocess.STDOUT, env=env)
    text = out.read_text()
    assert p.returncode == 0, text[-3000:]
    parsed = results.parse(text)
    assert [r.name for r in parsed.runs] == [
        "xz-deb-shim-deferred", "xz-deb-shim-inplace",
        "gzip-deb-shim-deferred", "gzip-deb-shim-inplace",
        "gzip-deb-libc-deferred", "gzip-deb-libc-inplace"]
    assert cli.main(["--results", str(out)]) == 0
    rows = {(r["program"], r["build"], r["entry"]): r for r in
            cli.summarize(parsed, guest=False)[0]}
    for key in (("xz", "deb", "shim"), ("gzip", "deb", "shim"),
                ("gzip", "deb", "libc")):
        assert rows[key]["inplace"]["entries"] > 5, rows[key]


def test_the_real_programs_in_place_on_the_host(built, tmp_path, perf_ok):
    """make realprograms' xz, gzip and sqlite3 (build/realstacks/guest),
    with the shim of this tree, in place on the host: built with frame
    pointers, every call's stack is equal through main and none whole
    (bookworm's __libc_start_call_main keeps argc in %rbp); as Debian
    builds them or with SFrame (the host's perf walks frame pointers
    only), none is equal through main."""
    dirs = {b: os.path.join(REALPROGRAMS, b)
            for b in ("deb", "fp", "sframe", "lib")}
    if not all(os.path.isdir(d) for d in dirs.values()):
        pytest.skip(f"no make realprograms tree at {REALPROGRAMS}")
    rs = tmp_path / "rs"
    realstacks_tree(built, rs, dirs)
    out = tmp_path / "results.log"
    env = dict(os.environ, RS=str(rs), PERF=PERF, W=str(tmp_path / "w"),
               REALSTACKS_MODES="inplace")
    with open(out, "w") as f:
        p = subprocess.run(["sh", str(rs / "run.sh"), "all"], stdout=f,
                           stderr=subprocess.STDOUT, env=env)
    text = out.read_text()
    assert p.returncode == 0, text[-3000:]
    parsed = results.parse(text)
    rows, problems, _ = cli.summarize(parsed, guest=False)
    assert not problems, problems
    assert len(rows) == 9
    for r in rows:
        i = r["inplace"]
        assert i["entries"] > 5 and i["equal"] == 0, r
        want = i["entries"] if r["build"] == "fp" else 0
        assert i["through_main"] == want, r


def test_the_guest_is_told_the_plan(tmp_path):
    """make realstacks' boot: vmtest.realstacks=PLAN on the command line
    (ci/guest/init then runs /realstacks/run.sh PLAN and nothing else)."""
    import argparse
    from ci.guest import arch as guest_arch, vm
    arch = guest_arch.load("x86_64")
    a = argparse.Namespace(smp=2, mem="2G", kernel="bzImage", initrd="i.cpio",
                           out=str(tmp_path), jobs=2, filter="", bench="",
                           stress=0, stress_args="",
                           realstacks="xz:fp,gzip:all:libc")
    cmd = vm.command(a, arch.QEMU, arch.TCG_ARGS, arch)
    append = cmd[cmd.index("-append") + 1].split()
    assert "vmtest.realstacks=xz:fp,gzip:all:libc" in append
    with open(os.path.join(ROOT, "ci", "guest", "init")) as f:
        init = f.read()
    assert re.search(r'realstacks=\$\(param realstacks\)\n.*?'
                     r'/realstacks/run.sh "\$realstacks" >&3 2>&1\n\s*'
                     r'echo "# vmtest-realstacks-exit: \$\?" >&3', init, re.S)


@pytest.mark.parametrize("plan", ["xz:fp;reboot", "XZ:fp", "xz fp"])
def test_a_plan_the_command_line_cannot_carry_is_refused(plan):
    p = subprocess.run(["bash", os.path.join(ROOT, "ci", "judge", "realstacks.sh"),
                        "kobj", "initrd", "out", "2", plan],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "REALSTACKS=" in p.stderr, p.stderr


def test_the_runner_refuses_a_plan_naming_nothing(tmp_path):
    env = dict(os.environ, RS=SHIM_DIR, PERF="/bin/true", W=str(tmp_path))
    for plan, why in (("xz", "is not PROGRAM:BUILD[:ENTRY]"),
                      ("xz:fp:shim:libc", "is not PROGRAM:BUILD[:ENTRY]"),
                      ("python3:deb", "names no program, build and entry"),
                      ("xz:fp:kernel", "names no program, build and entry"),
                      ("data", "names no program")):
        p = subprocess.run(["sh", os.path.join(SHIM_DIR, "run.sh"), plan],
                           capture_output=True, text=True, env=env)
        assert p.returncode == 2 and why in p.stdout, p.stdout


def test_the_runners_plan_names_rows_and_entries(tmp_path):
    """Which runs a plan makes (perf replaced by a stub that fails at
    once: each run is still reported, in order), and what each is told:
    the entry, which the shim gets as REALSTACKS_MODE."""
    perf = tmp_path / "perf"
    perf.write_text('#!/bin/sh\n[ "$1" = record ] && '
                    'echo "REALSTACKS_MODE=$REALSTACKS_MODE" >&2\nexit 3\n')
    perf.chmod(0o755)
    tracing = tmp_path / "tracing"
    for c in ("read", "write", "pread64", "pwrite64"):
        d = tracing / "events" / "syscalls" / f"sys_enter_{c}"
        d.mkdir(parents=True)
        (d / "id").write_text("7\n")
    env = dict(os.environ, RS=SHIM_DIR, PERF=str(perf), W=str(tmp_path / "w"),
               TRACING=str(tracing), REALSTACKS_MODES="inplace")
    for plan, want in (
            ("all", [f"{p}-{b}-shim" for p in ("xz", "gzip", "sqlite3")
                     for b in ("deb", "fp", "sframe")]),
            ("xz:fp,xz:fp:shim", ["xz-fp-shim"]),
            ("gzip:all:libc", ["gzip-deb-libc", "gzip-fp-libc",
                               "gzip-sframe-libc"]),
            ("xz:deb:all", ["xz-deb-shim", "xz-deb-libc"])):
        p = subprocess.run(["sh", os.path.join(SHIM_DIR, "run.sh"), plan],
                           capture_output=True, text=True, env=env)
        parsed = results.parse(p.stdout)
        assert [r.name for r in parsed.runs] == [f"{w}-inplace" for w in want]
        for r in parsed.runs:
            assert r.record == 3
            assert r.files["record.err"].strip() == \
                f"REALSTACKS_MODE={r.entry}", r


def test_the_plan_word_data_brings_each_recording_back(tmp_path):
    """With "data" in the plan each run's data holds the perf.data perf
    record wrote, byte for byte, and a deferred run's the cpu-clock
    recording of its workload too; without it, none."""
    perf = tmp_path / "perf"
    # perf record's stub writes its -o file; perf script's prints nothing
    perf.write_text('#!/bin/sh\n[ "$1" = record ] || exit 0\n'
                    'while [ "$1" != -o ]; do shift; done\n'
                    'printf "PERFILE2\\000\\377 %s" "$2" >"$2"\n')
    perf.chmod(0o755)
    tracing = tmp_path / "tracing"
    for c in ("read", "write"):
        d = tracing / "events" / "syscalls" / f"sys_enter_{c}"
        d.mkdir(parents=True)
        (d / "id").write_text("7\n")
    env = dict(os.environ, RS=SHIM_DIR, PERF=str(perf), W=str(tmp_path / "w"),
               TRACING=str(tracing))
    for plan, kept in (("gzip:sframe,data", True), ("gzip:sframe", False)):
        p = subprocess.run(["sh", os.path.join(SHIM_DIR, "run.sh"), plan],
                           capture_output=True, text=True, env=env)
        parsed = results.parse(p.stdout)
        assert [r.name for r in parsed.runs] == [
            "gzip-sframe-shim-deferred", "gzip-sframe-shim-inplace"], p.stdout
        for r in parsed.runs:  # (no shim log: the stub runs no program)
            names = ["perf.data"] + (["sampled.data"] if r.mode == "deferred" else [])
            for name in names if kept else []:
                path = str(tmp_path / "w" / r.name / name)
                assert r.files[name] == b"PERFILE2\0\377 " + path.encode()
            assert set(results.BINARY) & set(r.files) == set(names if kept else [])
