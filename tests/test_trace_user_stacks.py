"""tools/trace_user_stacks.py, the merge of ftrace's deferred user stacks
(userstacktrace_delay) with the events that asked for them, on a real
recording: Debian's trace-cmd 3.1.6 recorded /selftests/known_stack in the
x86-64 guest (selftests/trace_cmd_test; make trace-recording keeps
tests/data/trace-cmd: trace.dat, the helper, files.txt naming its device
and inode in the guest, and the guest's trace-cmd report).

The truth is binutils': addr2line names the function at each frame's
address in the kept helper; the tool names it from the frame's file
offset, inode and device alone, as the stack event holds them. The host's
trace-cmd is Debian's (make deps installs it): its absence fails, as a
missing feature should, with what to run.
"""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import trace_user_stacks as tus  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "trace-cmd")
TOOL = os.path.join(ROOT, "tools", "trace_user_stacks.py")
KNOWN = ["ks_inner", "ks_middle", "ks_outer", "main"]


def tool(*args, stdin=None):
    return subprocess.run([sys.executable, TOOL, *args], input=stdin,
                          capture_output=True, text=True)


def trace_cmd():
    if not shutil.which("trace-cmd"):
        pytest.fail("no trace-cmd on the host: run 'make deps' (Debian's "
                    "trace-cmd reads the kept recording)")


@pytest.fixture(scope="module")
def symfs(tmp_path_factory):
    """The guest's files under a directory, by the paths files.txt gives."""
    d = tmp_path_factory.mktemp("symfs")
    with open(os.path.join(DATA, "files.txt")) as fh:
        for line in fh:
            path = line.split(None, 2)[2].strip()
            dst = str(d) + path
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(os.path.join(DATA, os.path.basename(path)), dst)
    return str(d)


def blocks(text):
    """(event line, [frame lines]) of the tool's output."""
    out = []
    for line in text.splitlines():
        if line.startswith("\t"):
            out[-1][1].append(line[1:])
        else:
            out.append((line, []))
    return out


def addr2line(ips):
    p = subprocess.run(["addr2line", "-f", "-e",
                        os.path.join(DATA, "known_stack"),
                        *[f"{ip:#x}" for ip in ips]],
                       capture_output=True, text=True, check=True)
    return p.stdout.splitlines()[0::2]


def test_each_event_comes_with_its_stack_named_as_binutils_names_it(symfs):
    trace_cmd()
    p = tool("-i", os.path.join(DATA, "trace.dat"), "--files",
             os.path.join(DATA, "files.txt"), "--symfs", symfs)
    assert p.returncode == 0, p.stderr
    events = [b for b in blocks(p.stdout) if "sys_enter_getppid:" in b[0]]
    with open(os.path.join(DATA, "report.txt")) as fh:
        want = sum("sys_enter_getppid:" in line for line in fh)
    assert want > 0 and len(events) == want
    ips, names = [], []
    for line, frames in events:
        assert len(frames) >= 4, (line, frames)
        got = [f.split()[1].split("+")[0] for f in frames[:4]]
        assert got == KNOWN, (line, frames)
        for f in frames:
            if "(/selftests/known_stack)" in f:
                ips.append(int(f.split()[0], 16))
                names.append(f.split()[1].split("+")[0])
    assert len(ips) >= 4 * len(events)
    assert addr2line(ips) == names


def test_guest_report_text_reads_as_the_recording_does(symfs):
    trace_cmd()
    args = ["--files", os.path.join(DATA, "files.txt"), "--symfs", symfs]
    a = tool("-i", os.path.join(DATA, "trace.dat"), *args)
    b = tool("--report", os.path.join(DATA, "report.txt"), *args)
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr

    def frames(text):
        return [f for _, fr in blocks(text) for f in fr]
    assert frames(a.stdout) == frames(b.stdout) and frames(a.stdout)


def test_unknown_files_show_offset_inode_and_device():
    with open(os.path.join(DATA, "files.txt")) as fh:
        dev, inode, _ = fh.readline().split(None, 2)
    p = tool("--report", os.path.join(DATA, "report.txt"))
    assert p.returncode == 0, p.stderr
    where = f"(inode {inode} dev {int(dev) >> 20}:{int(dev) & 0xfffff})"
    assert where in p.stdout


def test_bad_input_is_refused_with_what_to_do(tmp_path):
    p = tool("-i", str(tmp_path / "none.dat"))
    assert p.returncode == 2 and "trace-cmd record -O " \
        "userstacktrace_delay writes one" in p.stderr
    bad = tmp_path / "files.txt"
    bad.write_text("12 34 /bin/x\nnot a line\n")
    p = tool("--report", os.path.join(DATA, "report.txt"), "--files",
             str(bad))
    assert p.returncode == 2 and ":2: want" in p.stderr
    p = tool("-i", os.path.join(DATA, "trace.dat"), "--trace-cmd",
             str(tmp_path / "no-trace-cmd"))
    assert p.returncode == 2 and "install trace-cmd" in p.stderr


# What a real recording cannot be made to hold: a stack event lost, a
# cookie on another CPU between, a task that returned on another CPU.
CRAFTED = """\
 a-10 [000] 1.000001: sys_enter_getppid:
 b-11 [001] 1.000002: sys_enter_getppid:
 a-10 [000] 1.000003: user_unwind_cookie:   cookie=7
 b-11 [001] 1.000004: user_unwind_cookie:   cookie=9
 c-12 [000] 1.000005: sched_switch:         prev=c
 a-10 [001] 1.000006: user_unwind_stack:    cookie=7 stack={0x10,0x20} \
inodes={0xffffffffffffffff,0x0} dev={0x0,0x0} ips={0x4010,0x7ff0}
"""


def test_merge_follows_cookies_across_cpus_and_says_what_is_missing():
    merged = tus.merge(tus.parse(CRAFTED))
    got = [(d["pid"], d["event"], c, st and st["ips"])
           for d, c, st in merged]
    assert got == [(10, "sys_enter_getppid", 7, [0x4010, 0x7ff0]),
                   (11, "sys_enter_getppid", 9, None),
                   (12, "sched_switch", None, None)]
    p = tool("--report", "-", stdin=CRAFTED)
    assert p.returncode == 0, p.stderr
    assert "\t            4010 [no mapping]\n" \
           "\t            7ff0 [anonymous]\n" in p.stdout
    assert "(cookie 9: no user stack came)" in p.stdout
