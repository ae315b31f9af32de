"""Choose QEMU's accelerator: KVM only when a probe shows that it boots.

A readable /dev/kvm proves nothing: on hosts with broken nested KVM, QEMU
aborts at the first vCPU start ("failed to set MSR 0x10a") with -cpu host,
and hangs silently with other CPU models. So the probe boots the test
kernel itself under KVM with an early serial console and waits for its
first line ("Linux version ..."), which a working KVM prints in well under
a second. Anything else (QEMU exits, or prints nothing in time) means TCG,
and the reason is kept for run.json and the summary.
"""
import json
import os
import select
import shutil
import signal
import subprocess
import time

from ci.guest import arch as guest_arch

FIRST_LINE = b"Linux version"


def kvm_device():
    return os.environ.get("VMTEST_KVM_DEV", "/dev/kvm")


def probe_kvm(qemu, kernel, timeout, arch):
    """Boot kernel under KVM for at most timeout s: (works, reason)."""
    dev = kvm_device()
    if not os.path.exists(dev):
        return False, f"no {dev}"
    if not os.access(dev, os.R_OK | os.W_OK):
        return False, f"{dev} is not readable and writable by this user"
    cmd = [qemu, *arch.KVM_ARGS, "-smp", "1", "-m", "256", "-nodefaults",
           "-display", "none", "-no-reboot", "-kernel", kernel,
           "-serial", "stdio", "-append", arch.PROBE_CMDLINE]
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        return False, f"KVM probe could not start {qemu}: {e}"
    out, hung = b"", False
    try:
        while True:
            if time.monotonic() - t0 > timeout:
                hung = True
                break
            ready, _, _ = select.select([proc.stdout], [], [], 0.1)
            chunk = os.read(proc.stdout.fileno(), 4096) if ready else b""
            out += chunk
            if FIRST_LINE in out:
                return True, (f"KVM probe reached the first console "
                              f"line in {time.monotonic() - t0:.1f} s")
            if (ready and not chunk) or proc.poll() is not None:
                break  # QEMU closed its console or exited
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        err = proc.communicate()[1].decode(errors="replace").strip()
    if hung:
        return False, (f"KVM probe: no console output within {timeout:g} s "
                       "(a broken nested KVM hangs like this)")
    first = err.splitlines()[0] if err else "no message"
    return False, (f"KVM probe: QEMU exited with status {proc.returncode} "
                   f"before the first console line: {first}")


def _host_key(qemu):
    """What the probe's answer depends on: this boot of the host, its KVM
    device and the QEMU binary."""
    try:
        boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    except OSError:
        return None
    path = shutil.which(qemu) or qemu
    st = os.stat(path) if os.path.exists(path) else None
    return [boot, kvm_device(), path, st.st_mtime if st else None]


def choose(forced, qemu, kernel, timeout=10, cache=None, arch=None):
    """(accel, reason) with accel 'kvm' or 'tcg'; forced is '', kvm or tcg.

    cache: a file that keeps the probe's answer for this boot of the host,
    so a host whose KVM hangs pays the probe's timeout once. arch: the
    guest's module (ci/guest/arch.py; default x86_64): KVM runs a guest
    only on a host of its own architecture, so on any other it is TCG
    without a probe."""
    arch = arch or guest_arch.load("x86_64")
    if forced == "tcg":
        return "tcg", "forced by ACCEL=tcg"
    if forced not in ("", "kvm"):
        raise ValueError(f"ACCEL={forced}: use ACCEL=kvm or ACCEL=tcg")
    host = os.uname().machine
    if host not in arch.KVM_HOSTS:
        if forced == "kvm":
            raise ValueError(f"ACCEL=kvm: KVM cannot run an {arch.NAME} "
                             f"guest on this {host} host; use ACCEL=tcg")
        return "tcg", (f"{arch.NAME} guest on an {host} host: KVM runs "
                       f"it only on {' or '.join(arch.KVM_HOSTS)} hosts")
    if forced == "kvm":
        return "kvm", "forced by ACCEL=kvm (no probe)"
    key = _host_key(qemu) if cache else None
    if key:
        try:
            saved = json.load(open(cache))
            if saved["key"] == key:
                return saved["accel"], saved["why"] + " (probed earlier " \
                    "in this boot of the host)"
        except (OSError, ValueError, KeyError):
            pass
    ok, why = probe_kvm(qemu, kernel, timeout, arch)
    acc = "kvm" if ok else "tcg"
    if key:
        with open(cache, "w") as fh:
            json.dump({"key": key, "accel": acc, "why": why}, fh)
    return acc, why
