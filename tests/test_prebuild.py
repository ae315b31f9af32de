"""ci/checks/prebuild.sh, make check's builds ahead of its steps, run with
a make that only says what it was asked (nothing is built)."""
import os
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "ci", "checks", "prebuild.sh")


def autogroup_nice():
    """The nice value of this process's autogroup as the fake make prints
    it: empty where the file is (a process of init's session, as CI's runner
    is, belongs to no autogroup of its own)."""
    try:
        with open("/proc/self/autogroup") as f:
            fields = f.read().split()
    except FileNotFoundError:  # a kernel without autogroups
        return ""
    return fields[2] if len(fields) > 2 else ""


def fake_make(tmp_path):
    """A make on PATH that appends its arguments, niceness and lock to
    calls.log; 'fail' among them makes it exit 3."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    (bindir / "make").write_text(
        "#!/bin/bash\n"
        f'echo "$* nice=$(nice) lock=$VMTEST_LOCK '
        f'group=$(cut -d" " -f3 /proc/self/autogroup)" >>{log}\n'
        'echo "output of $*"\n'
        'case " $* " in *" fail "*) exit 3 ;; esac\n')
    (bindir / "make").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    return env, log


def test_items_run_in_order_niced_under_their_own_lock(tmp_path):
    env, log = fake_make(tmp_path)
    d = tmp_path / "pre"
    r = subprocess.run(["bash", SCRIPT, str(os.getpid()), str(d),
                        "a||kernel CONFIG=normal",
                        "b||kernel fail CONFIG=debug",
                        "c||initramfs kernel ARCH=arm64"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    assert [c.split(" nice=")[0] for c in calls] == [
        "-s kernel CONFIG=normal", "-s kernel fail CONFIG=debug",
        "-s initramfs kernel ARCH=arm64"]
    # Niced, and not build/.kbuild.lock: the steps' guests hold that one
    assert all(f"nice=19 lock={d}/lock" in c for c in calls), calls
    # Not its own session: the autogroup is the caller's, left alone
    assert all(c.endswith(" group=" + autogroup_nice()) for c in calls), \
        calls
    # A failed item says so; the next one still runs (a step that needs
    # it builds it again and shows the error)
    assert (d / "a.done").read_text().split()[0] == "0"
    assert (d / "b.done").read_text().split()[0] == "3"
    assert (d / "c.done").read_text().split()[0] == "0"
    assert (d / "b.log").read_text() == \
        "output of -s kernel fail CONFIG=debug\n"


def test_an_item_waits_for_the_step_it_names(tmp_path):
    env, log = fake_make(tmp_path)
    d = tmp_path / "pre"
    p = subprocess.Popen(["bash", SCRIPT, str(os.getpid()), str(d),
                          "a||kernel",
                          "arm64|vmtest|initramfs ARCH=arm64"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    try:
        deadline = time.monotonic() + 60
        while not (d / "a.done").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (d / "a.done").exists()
        # The gate: nothing of the arm64 item until check.sh's vmtest step
        # has passed (prebuild polls every 2 s: 5 s is two polls and more)
        time.sleep(5)
        assert p.poll() is None and not (d / "arm64.done").exists()
        assert len(log.read_text().splitlines()) == 1
        (d / "step-vmtest.done").touch()
        assert p.wait(timeout=60) == 0, p.stderr.read()
    finally:
        p.kill()
    assert (d / "arm64.done").read_text().split()[0] == "0"
    assert log.read_text().splitlines()[1].startswith(
        "-s initramfs ARCH=arm64 ")


def test_in_a_session_of_its_own_its_autogroup_is_niced(tmp_path):
    """check.sh starts it with setsid: a new autogroup, which the scheduler
    would weigh as much as the check's own whatever the processes' nice
    values; it nices the group so that the steps' guests come first."""
    if not os.path.exists("/proc/self/autogroup"):
        pytest.skip("no scheduler autogroups on this kernel")
    env, log = fake_make(tmp_path)
    d = tmp_path / "pre"
    subprocess.run(["setsid", "-w", "bash", SCRIPT, str(os.getpid()),
                    str(d), "a||kernel"],
                   env=env, check=True, timeout=60)
    assert log.read_text().split()[-1] == "group=19"


def test_it_stops_with_its_whole_group_when_the_check_is_gone(tmp_path):
    """A check killed outright (no trap runs) leaves no build behind: the
    script watches its parent and, once it is gone, ends its process group
    (the make it runs included) and says it has ended."""
    env, log = fake_make(tmp_path)
    bindir = tmp_path / "bin"
    # This make runs until it is killed
    (bindir / "make").write_text(f"#!/bin/bash\necho $$ >{tmp_path}/make.pid\n"
                                 "exec sleep 600\n")
    parent = subprocess.Popen(["sleep", "600"])
    d = tmp_path / "pre"
    p = subprocess.Popen(["setsid", "-w", "bash", SCRIPT, str(parent.pid),
                          str(d), "a||kernel"], env=env)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "make.pid").exists() and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        pid = int((tmp_path / "make.pid").read_text())
        assert not (d / "ended").exists()
        parent.kill()
        parent.wait()
        assert p.wait(timeout=30) != 0
        assert (d / "ended").exists() and not (d / "a.done").exists()
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not os.path.exists(f"/proc/{pid}"), "its make outlived it"
    finally:
        p.kill()
        parent.kill()


# Until its own CPU time (utime + stime, the 12th and 13th fields after
# the name) is a second, or a minute has passed
SPIN = ('hz=$(getconf CLK_TCK); while [ $SECONDS -lt 60 ]; do\n'
        '  read -r l </proc/self/stat; read -ra s <<<"${l##*) }"\n'
        '  (( s[11] + s[12] >= hz )) && break\ndone\n')


def spinning_make(tmp_path, spin_on):
    """A make on PATH whose child burns one CPU-second (its own CPU time,
    whatever the host's speed) when its arguments are SPIN_ON, and prints
    them."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "spin").write_text("#!/bin/bash\n" + SPIN)
    (bindir / "spin").chmod(0o755)
    (bindir / "make").write_text(
        "#!/bin/bash\n"
        'echo "make $*"\n'
        f'[ "$*" != "{spin_on}" ] || {bindir}/spin\n')
    (bindir / "make").chmod(0o755)
    return dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")


def test_an_item_s_cpu_time_is_its_make_s_and_its_children_s(tmp_path):
    env = spinning_make(tmp_path, "-s kernel CONFIG=debug")
    d = tmp_path / "pre"
    subprocess.run(["bash", SCRIPT, str(os.getpid()), str(d),
                    "a||kernel CONFIG=normal", "b||kernel CONFIG=debug"],
                   env=env, check=True, timeout=120, capture_output=True)
    assert (d / "a.done").read_text().split()[2] == "0"
    assert int((d / "b.done").read_text().split()[2]) >= 1


def test_check_prints_each_step_s_cpu_time_and_the_background_s(tmp_path):
    """check.sh with a make that builds nothing: the vmtest step's make
    (and the background's build of the normal kernel) each spend a
    CPU-second; the other steps none. The background's time is not the
    steps' even when it ends while one runs."""
    env = spinning_make(tmp_path, "-s vmtest CONFIG=normal")
    (tmp_path / "bin" / "make").write_text(
        (tmp_path / "bin" / "make").read_text() +
        f'[ "$*" != "-s kernel CONFIG=normal" ] || {tmp_path}/bin/spin\n'
        # The background ends while a step runs (and is reaped by
        # check.sh meanwhile): its last build waits for the test-perf step,
        # which runs until the background has ended
        f'[ "$*" != "-s kernel CONFIG=nounwind" ] || until [ -e {tmp_path}/tp ]'
        ' || [ $SECONDS -ge 120 ]; do sleep 0.1; done\n'
        f'[ "$*" != "-s test-perf" ] || {{ touch {tmp_path}/tp; until [ -e '
        f'{tmp_path}/build/check-prebuild/ended ] || [ $SECONDS -ge 120 ];'
        ' do sleep 0.1; done; sleep 1; }\n')
    # CHECK_STRESS_S differs from the default: nothing is recorded in doc/
    # Every CHECK_ variable as this test needs it, whatever make check's
    # own caller set (CHECK_PREBUILD=0 has no background to wait for)
    for k in [k for k in env if k.startswith("CHECK_")]:
        del env[k]
    env.update(BUILD=str(tmp_path / "build"), CHECK_ARM64="0",
               CHECK_STRESS_S="5",
               CCACHE_DIR=str(tmp_path / "ccache"))
    # Its own session: whatever is left at the end goes with it
    p = subprocess.Popen(["bash", os.path.join(ROOT, "ci", "checks",
                                               "check.sh")],
                         env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=300)
    finally:
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
    r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    assert r.returncode == 0, r.stderr
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines()
             if " rc=" in ln}
    # The debug kernel, which two steps wait for, is said once
    assert r.stdout.count("(debug)") == 1, r.stdout
    cpu = {k: int(ln.split("cpu")[1].split()[0]) for k, ln in lines.items()}
    assert cpu["vmtest"] >= 1 and cpu["(normal)"] >= 1, r.stdout
    assert cpu["vmtest-nounwind"] == 0 and cpu["(nounwind)"] == 0, r.stdout
    assert sum(cpu.values()) - cpu["vmtest"] - cpu["(normal)"] == 0, r.stdout


def test_cpu_seconds_round_and_say_when_proc_cannot_tell():
    """ci/lib.sh's measure: ticks subtracted then rounded; an unknown
    reading gives "?" (a measure never fails the step it measures)."""
    hz = os.sysconf("SC_CLK_TCK")
    r = subprocess.run(
        ["bash", "-c", f'. {ROOT}/ci/lib.sh; children_ticks; '
         'echo "[$CHILDREN_TICKS]"; '
         f'cpu_seconds 10 $((10 + {hz} * 3 / 2)); cpu_seconds "" 5; '
         'cpu_seconds 1 x'],
        capture_output=True, text=True, check=True)
    ticks, rounded, unknown, bad = r.stdout.split()
    assert ticks.strip("[]").isdigit()
    assert (rounded, unknown, bad) == ("2", "?", "?")
