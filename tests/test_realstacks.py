"""make realstacks on the host, without a guest: the comparator
(ci/judge/realstacks/) on logs made by hand (equal, one frame off, cut
short, the caller skipped, no record, lost, told apart by time and
arguments), the results channel's format, the table; the shim
(selftests/realstacks/) preloaded into a program of known stack
(tests/data/realstacks/calls.c); and, with the tree's perf (VMTEST_PERF,
else build/out/linux/perf/perf) where the host lets it record a
tracepoint, the shim's truth against the host kernel's in-place chains
and selftests/realstacks/run.sh end to end on the host's own xz and gzip
through busybox alone. The host kernel has no deferral: its deferred runs
fall back, and the table says so."""
import base64
import io
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

# A made-up address space: the shim, libc, the program.
SHIM = (0x7000_0000, 0x7000_1000)
LIBC = (0x7100_0000, 0x7120_0000)
MAIN = (0x5500_0000, 0x5501_0000)
SHIM_FRAMES = [0x7000_0100, 0x7000_0200]        # shim_enter, the stub
LIBC_IP = 0x7110_0010                           # after libc's syscall
TRUTH = [0x5500_0100, 0x5500_0200, 0x5500_0300,  # caller, ..., main
         0x7100_0400, 0x7100_0500,              # libc's start code
         0x5500_0050]                           # _start
COOKIE = 0x2a160003


def header(pid=100):
    return "\n".join([
        f"S {pid} {SHIM[0]:x} {SHIM[1]:x}",
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


def test_the_whole_stack_is_equal():
    res = judge(header() + entry(0, T0),
                sample(T0 + 50, COOKIE) + record(T0 + 90, COOKIE,
                                                 [LIBC_IP] + TRUTH))
    assert only_verdict(res).outcome == "equal"
    assert res.other_samples == 0


def test_one_frame_off_is_wrong_at_its_depth():
    bad = list(TRUTH)
    bad[2] += 4
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, COOKIE)
                           + record(T0 + 90, COOKIE, [LIBC_IP] + bad)))
    assert v.outcome == "differs"
    assert v.diagnosis == "wrong from depth 2 (in [main])"


def test_a_stack_cut_short_stops_early():
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, COOKIE)
                           + record(T0 + 90, COOKIE, [LIBC_IP] + TRUTH[:4])))
    assert (v.outcome, v.diagnosis) == \
        ("differs", "stops 2 frames early (in libc.so.6)")


def test_frames_past_the_truth_are_a_difference():
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, COOKIE)
                           + record(T0 + 90, COOKIE,
                                    [LIBC_IP] + TRUTH + [0x1234])))
    assert (v.outcome, v.diagnosis) == ("differs", "1 frame past the end")


def test_the_frame_pointer_walk_from_a_frameless_wrapper():
    """libc's syscall wrapper keeps no frame: a frame pointer step from
    it reads the caller's caller, and Debian's __libc_start_main keeps
    argc in %rbp, which ends the walk at main's return address."""
    v = only_verdict(judge(
        header() + entry(0, T0),
        sample(T0 + 50, frames=[LIBC_IP] + TRUTH[1:4]), mode="in place"))
    assert (v.outcome, v.diagnosis) == \
        ("differs", "caller skipped, stops 2 frames early (in libc.so.6)")


def test_nothing_above_the_wrapper():
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, frames=[LIBC_IP]),
                           mode="in place"))
    assert v.diagnosis == "nothing above libc's wrapper"


def test_a_record_that_never_came():
    v = only_verdict(judge(header() + entry(0, T0), sample(T0 + 50, COOKIE)))
    assert v.outcome == "no record"


def test_a_lost_entry_fails_the_run():
    res = judge(header() + entry(0, T0), "")
    assert only_verdict(res).outcome == "no sample"
    run = results.Run("xz", "fp", "deferred", "write", 0, 0, "ok",
                      files={"shim.log": header() + entry(0, T0),
                             "script.txt": ""})
    parsed = results.Results(start={}, end={"runs": 1}, runs=[run])
    _, problems, _ = cli.summarize(parsed, guest=True)
    assert any("no sample" in p for p in problems), problems


def test_a_sample_in_place_in_a_deferred_run():
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, frames=[LIBC_IP] + TRUTH)))
    assert v.outcome == "in place"


def test_a_stack_that_does_not_start_in_libc():
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, COOKIE)
                           + record(T0 + 90, COOKIE, TRUTH)))
    assert v.outcome == "not at libc"


def test_entries_the_shim_did_not_make_are_left_over():
    """libc's own writes (stdio's) reach the kernel without the shim:
    other arguments, or before the call's timestamp, they are no call's."""
    script = (sample(T0 - 10, COOKIE + 1)            # before the call
              + sample(T0 + 20, COOKIE + 2, args=(1, 0x4000, 8))
              + sample(T0 + 40, COOKIE + 3, call="read")
              + sample(T0 + 50, COOKIE)
              + record(T0 + 90, COOKIE, [LIBC_IP] + TRUTH))
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
              + record(T0 + 90, COOKIE, [LIBC_IP] + TRUTH)
              + sample(T0 + 1050, COOKIE + 4)
              + record(T0 + 1090, COOKIE + 4, [LIBC_IP] + other))
    res = judge(log, script)
    assert [v.outcome for v in res.verdicts] == ["equal", "equal"]
    # Swapped records: each call gets its own entry's stack, not the other's
    script = (sample(T0 + 50, COOKIE)
              + record(T0 + 90, COOKIE, [LIBC_IP] + other)
              + sample(T0 + 1050, COOKIE + 4)
              + record(T0 + 1090, COOKIE + 4, [LIBC_IP] + TRUTH))
    res = judge(log, script)
    assert [v.outcome for v in res.verdicts] == ["differs", "differs"]


def test_a_lost_entry_does_not_take_the_next_calls():
    """A call whose entry was lost: the thread's next call's sample is not
    its (the window ends at the next call's timestamp)."""
    log = header() + entry(0, T0) + entry(1, T0 + 1000)
    res = judge(log, sample(T0 + 1050, COOKIE)
                + record(T0 + 1090, COOKIE, [LIBC_IP] + TRUTH))
    assert [v.outcome for v in res.verdicts] == ["no sample", "equal"]


def test_libcs_own_frames_before_the_caller_are_its_own():
    """A libc whose wrapper enters the kernel from a function it calls
    (glibc 2.41's __syscall_cancel_arch): every leading frame in libc is
    the wrapper's, the truth starts after them."""
    v = only_verdict(judge(header() + entry(0, T0),
                           sample(T0 + 50, COOKIE)
                           + record(T0 + 90, COOKIE, [LIBC_IP, LIBC_IP + 0x300,
                                                      LIBC_IP + 0x500] + TRUTH)))
    assert v.outcome == "equal"


def test_the_fd_is_an_int():
    """A caller passes an int in %edi: the upper half of %rdi is not its."""
    v = only_verdict(judge(header() + entry(0, T0, args=(0x5_0000_0001, 0x1000, 8)),
                           sample(T0 + 50, COOKIE, args=(1, 0x1000, 8))
                           + record(T0 + 90, COOKIE, [LIBC_IP] + TRUTH)))
    assert v.outcome == "equal"
    v = only_verdict(judge(header() + entry(0, T0, args=(1, 0x1000, 8)),
                           sample(T0 + 50, COOKIE, args=(1, 0x1000, 9))))
    assert v.outcome == "no sample"


def test_a_forked_child_has_its_parents_address_space():
    log = (header() + "F 101 100\n"
           + entry(0, T0, pid=101, tid=101))
    res = judge(log, sample(T0 + 50, COOKIE, tid=101)
                + record(T0 + 90, COOKIE, [LIBC_IP] + TRUTH, tid=101))
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
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    b64 = base64.encodebytes(buf.getvalue()).decode()
    return b64


def results_text(runs, end=None):
    """A results log as selftests/realstacks/run.sh prints it."""
    out = ["# realstacks-start: kernel=6.12.0 plan=all:all rows=1",
           "# realstacks-perf: perf version 6.12"]
    for (prog, build, mode, check, files) in runs:
        name = f"{prog}-{build}-{mode}"
        out.append(f"# realstacks-run: program={prog} build={build} "
                   f"mode={mode} calls=read,write record=0 script=0 "
                   f"check={check}")
        out.append(f"# realstacks-data: {name}")
        out.append(run_data(files).rstrip("\n"))
        out.append(f"# realstacks-data-end: {name}")
    out.append(f"# realstacks-end: runs={len(runs) if end is None else end}")
    return "\n".join(out) + "\n"


GOOD = {"shim.log": header() + entry(0, T0),
        "script.txt": sample(T0 + 50, COOKIE)
        + record(T0 + 90, COOKIE, [LIBC_IP] + TRUTH),
        "record.err": "", "script.err": ""}
IN_PLACE = dict(GOOD, **{"script.txt": sample(T0 + 50, frames=[LIBC_IP]
                                              + TRUTH[1:4])})


def test_the_table_from_a_results_log(tmp_path, capsys):
    text = results_text([("xz", "fp", "deferred", "ok", GOOD),
                         ("xz", "fp", "inplace", "ok", IN_PLACE)])
    path = tmp_path / "results.log"
    path.write_text(text)
    assert cli.main(["--results", str(path)]) == 0
    out = capsys.readouterr().out
    row = next(l for l in out.splitlines() if l.startswith("xz"))
    assert re.search(r"xz\s+fp\s+1\s+1/1 \(100\.0 %\)\s+0/1 \(0\.0 %\)", row), row
    md = (tmp_path / "table.md").read_text()
    assert "| xz | fp | 1 | 1/1 (100.0 %) | 0/1 (0.0 %) |" in md, md
    details = (tmp_path / "details.txt").read_text()
    assert "caller skipped, stops 2 frames early (in libc.so.6): 1" in details


@pytest.mark.parametrize("edit, why", [
    (lambda t: t.replace("check=ok", "check=wrong-output", 1),
     "the workload's output is wrong-output"),
    (lambda t: t.replace("record=0", "record=1", 1),
     "perf record exited 1"),
    (lambda t: t.replace("runs=2", "runs=3"), "realstacks-end says 3 runs"),
    (lambda t: t[:t.index("# realstacks-data-end: xz-fp-inplace")],
     "never ended"),
    (lambda t: re.sub(r"(# realstacks-data: xz-fp-deferred\n)\S+",
                      r"\1AAAA", t), "does not unpack"),
])
def test_a_run_that_cannot_be_trusted_fails(tmp_path, capsys, edit, why):
    text = results_text([("xz", "fp", "deferred", "ok", GOOD),
                         ("xz", "fp", "inplace", "ok", IN_PLACE)])
    path = tmp_path / "results.log"
    path.write_text(edit(text))
    assert cli.main(["--results", str(path)]) == 1
    assert why in capsys.readouterr().out


def test_a_guest_whose_kernel_refused_deferral_fails():
    run = results.Run("xz", "fp", "deferred", "write", 0, 0, "ok",
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
    runs = [results.Run("sqlite3", b, "inplace", "write", 0, 0, f"md5={m}",
                        files=IN_PLACE) for b, m in (("deb", "aa"), ("fp", "bb"))]
    parsed = results.Results(start={}, end={"runs": 2}, runs=runs)
    _, problems, _ = cli.summarize(parsed, guest=False)
    assert any("differs between runs" in p for p in problems), problems


# The shim, preloaded into a program of known stack on the host.

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("realstacks")
    shim = d / "shim.so"
    subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra",
                    "-Werror", "-o", str(shim),
                    os.path.join(SHIM_DIR, "shim.c"),
                    os.path.join(SHIM_DIR, "stubs.S")], check=True)
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


def run_calls(built, tmp_path, rounds=3, env=None):
    d, shim, calls = built
    log = tmp_path / "shim.log"
    p = subprocess.run([str(calls), str(rounds)], capture_output=True,
                       text=True, env=dict(os.environ, LD_PRELOAD=str(shim),
                                           REALSTACKS_LOG=str(log),
                                           **(env or {})))
    assert p.returncode == 0, p.stderr
    return p, shimlog.parse(log.read_text())


def test_the_shim_logs_every_call_with_its_stack(built, tmp_path):
    p, log = run_calls(built, tmp_path)
    assert not log.problems
    want = int(p.stdout.split()[1])
    assert len(log.entries) == want, p.stdout
    calls = {}
    for e in log.entries:
        calls[e.call] = calls.get(e.call, 0) + 1
    # 3 tasks x 3 rounds (read is __read_chk: fortified, size known)
    assert calls == {"write": 12, "read": 9, "pread64": 9, "pwrite64": 9}
    syms = symbols(built[2])
    tids = {e.tid for e in log.entries}
    pids = {e.pid for e in log.entries}
    assert len(tids) == 3 and len(pids) == 2, (tids, pids)
    assert len({e.seq for e in log.entries if e.pid == min(pids)}) == 26

    def inside(addr, func, bias):
        """addr is a return address into func (after its first byte)."""
        lo, hi = syms[func]
        return lo < addr - bias <= hi

    for e in log.entries:
        proc = log.process(e.pid)
        assert proc is not None and proc.shim, e
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
    # The forked child said who its parent is
    child = max(pids)
    assert log.parents == {child: min(pids)}


def test_the_stubs_jump_to_libc_as_a_tail_call(built, tmp_path):
    """Preloaded after the shim, tailcheck.so's write() is what the stubs
    jump to: its return address must be the program's, not the shim's."""
    d, shim, calls = built
    check = tmp_path / "tailcheck.so"
    subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-o", str(check),
                    os.path.join(os.path.dirname(CALLS_C), "tailcheck.c")],
                   check=True)
    p = subprocess.run([str(calls), "3"], capture_output=True, text=True,
                       env=dict(os.environ, LD_PRELOAD=f"{shim} {check}",
                                REALSTACKS_LOG=str(tmp_path / "log")))
    assert p.returncode == 0, p.stderr
    # 2 threads x 4 writes through the shim (printf's write is libc's
    # own; the child's _exit() runs no destructor)
    counts = re.findall(r"tailcheck: (\d+) writes, (\d+) returning into "
                        r"the shim", p.stderr)
    assert counts == [("8", "0")], p.stderr


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


def record_calls(built, tmp_path, name, shim=True):
    d, shim_so, calls = built
    wid = open("/sys/kernel/tracing/events/syscalls/sys_enter_write/id").read().strip()
    data = tmp_path / f"{name}.data"
    env = dict(os.environ, REALSTACKS_LOG=str(tmp_path / f"{name}.log"),
               REALSTACKS_CALLS="write")
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


def test_the_stack_at_the_entry_is_the_one_without_the_shim(built, tmp_path,
                                                             perf_ok):
    """The stub's tail jump: the kernel sees, at libc's system call, the
    program's stack as it is without the shim (the same functions and
    offsets: where the objects are mapped may differ)."""
    def chains(text):
        """Each sample's frames as "sym+off (dso)", without addresses."""
        out = []
        for line in text.splitlines():
            if line.startswith("\t"):
                out[-1].append(line.split(None, 1)[1])
            elif line.strip() and not line.lstrip().startswith("ABI:"):
                out.append([])
        return sorted(tuple(c) for c in out)
    with_shim = chains(record_calls(built, tmp_path, "with"))
    without = chains(record_calls(built, tmp_path, "without", shim=False))
    assert with_shim == without
    # 12 writes of calls() (calls() itself skipped: libc's wrapper keeps
    # no frame), and printf's
    assert len(with_shim) == 13
    assert sum("level2+" in " ".join(c) for c in with_shim) == 12, with_shim


def test_the_truth_against_the_hosts_in_place_chains(built, tmp_path, perf_ok):
    """Every write of the main thread, as Debian's libc makes it: the
    frame pointer walk from its frameless wrapper skips the caller and
    ends at main's return address (argc in %rbp)."""
    text = record_calls(built, tmp_path, "inplace")
    log = shimlog.parse((tmp_path / "inplace.log").read_text())
    samples, records, problems = perfscript.parse(text)
    assert not problems
    res = compare.compare(log, samples, records, "in place")
    assert res.count("no sample") == 0
    main = [v for v in res.verdicts if v.entry.tid == v.entry.pid
            and v.entry.pid == min(e.pid for e in log.entries)]
    assert len(main) == 4
    assert {v.diagnosis for v in main} == \
        {"caller skipped, stops 2 frames early (in libc.so.6)"}


APPLETS = re.compile(r"for app in (.*?); do", re.S)


def test_the_runner_end_to_end_on_the_host(built, tmp_path, perf_ok):
    """selftests/realstacks/run.sh on the host's own xz and gzip (as
    deb/), with only busybox and the applets the guest's initramfs links
    on its PATH, then the comparator on its output."""
    for tool in ("busybox", "xz", "gzip"):
        if not shutil.which(tool):
            pytest.skip(f"no {tool} on the host")
    rs = tmp_path / "rs"
    (rs / "deb").mkdir(parents=True)
    (rs / "lib").mkdir()
    for prog in ("xz", "gzip"):
        os.symlink(shutil.which(prog), rs / "deb" / prog)
    ldd = subprocess.run(["ldd", shutil.which("xz"), str(built[1])],
                         capture_output=True, text=True, check=True).stdout
    for path in re.findall(r"(/\S+\.so[.\d]*)", ldd):
        name = os.path.basename(path)
        if not (rs / "lib" / name).exists():
            os.symlink(os.path.realpath(path), rs / "lib" / name)
    if not (rs / "lib" / "ld-linux-x86-64.so.2").exists():
        pytest.skip("no ld-linux-x86-64.so.2 in ldd's output")
    shutil.copy(built[1], rs / "shim.so")
    shutil.copy(os.path.join(SHIM_DIR, "run.sh"), rs / "run.sh")
    subprocess.run(["/usr/bin/python3", os.path.join(SHIM_DIR, "inputs.py"),
                    str(rs / "input")], check=True)
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
                            "xz:deb,gzip:deb"], stdout=f,
                           stderr=subprocess.STDOUT, env=env)
    text = out.read_text()
    assert p.returncode == 0, text[-3000:]
    parsed = results.parse(text)
    assert [r.name for r in parsed.runs] == [
        "xz-deb-deferred", "xz-deb-inplace", "gzip-deb-deferred",
        "gzip-deb-inplace"]
    assert cli.main(["--results", str(out)]) == 0
    rows = {(r["program"], r["build"]): r for r in
            cli.summarize(parsed, guest=False)[0]}
    for key in (("xz", "deb"), ("gzip", "deb")):
        assert rows[key]["inplace"]["entries"] > 5, rows[key]


def test_the_guest_is_told_the_plan(tmp_path):
    """make realstacks' boot: vmtest.realstacks=PLAN on the command line
    (ci/guest/init then runs /realstacks/run.sh PLAN and nothing else)."""
    import argparse
    from ci.guest import arch as guest_arch, vm
    arch = guest_arch.load("x86_64")
    a = argparse.Namespace(smp=2, mem="2G", kernel="bzImage", initrd="i.cpio",
                           out=str(tmp_path), jobs=2, filter="", bench="",
                           stress=0, stress_args="", realstacks="xz:fp,gzip:all")
    cmd = vm.command(a, arch.QEMU, arch.TCG_ARGS, arch)
    append = cmd[cmd.index("-append") + 1].split()
    assert "vmtest.realstacks=xz:fp,gzip:all" in append
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
    for plan, why in (("xz", "is not PROGRAM:BUILD"),
                      ("python3:deb", "names no program and build")):
        p = subprocess.run(["sh", os.path.join(SHIM_DIR, "run.sh"), plan],
                           capture_output=True, text=True, env=env)
        assert p.returncode == 2 and why in p.stdout, p.stdout
