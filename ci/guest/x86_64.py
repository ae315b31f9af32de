"""Everything the harness knows about the guest architecture, as data."""

NAME = "x86_64"
QEMU = "qemu-system-x86_64"
KERNEL_IMAGE = "arch/x86/boot/bzImage"
MAKE_TARGET = "bzImage"
# Extra arguments of every kernel make (none: the host's own compiler).
MAKE_ARGS = []
CROSS_COMPILE = ""
# tinyconfig's fragments: the generic ones, then this architecture's.
TINY_CONFIGS = ["kernel/configs/tiny-base.config", "kernel/configs/tiny.config",
                "arch/x86/configs/tiny.config"]
# The guest config's options that only this architecture has, verified
# like guest.config's.
GUEST_CONFIG = "ci/guest/config/x86_64.config"
# The selftests' CMake: the host's compilers and GoogleTest.
CMAKE_ARGS = []
# How ci/build/kconfig.py takes series.config: --series, every option the tree
# defines must be enabled.
SERIES_MODE = "--series"
# vCPUs of a make vmtest guest (SMP= overrides).
SMP = 4
# Boot parameters. panic=-1 reboots at once on a panic, and -no-reboot
# turns that reboot into QEMU's exit, so a panic ends the run in seconds.
CMDLINE = ("console=ttyS0,115200 panic=-1 rdinit=/init "
           "tsc=reliable no_hash_pointers")
# The KVM probe (ci/guest/accel.py): the earliest console line, then nothing.
PROBE_CMDLINE = "earlyprintk=serial,ttyS0,115200 console=ttyS0 panic=-1"
# KVM runs this guest only on a host of the same architecture.
KVM_HOSTS = ["x86_64"]
KVM_ARGS = ["-machine", "q35,accel=kvm", "-cpu", "host"]
TCG_ARGS = ["-machine", "q35", "-cpu", "max", "-accel", "tcg,thread=multi"]
# None: x86 patches kernel text through an int3, and the stale
# translations seen so far were met as that int3's oops, which vm.py
# answers with a boot on one thread. A vCPU that kept the text from
# before the patch would run it silently, as on arm64: not seen in the
# Debian rows, whose tests passed with threads and after retries alike.
ONE_THREAD_CONFIGS = []
# Two serial ports: ttyS0 is the kernel console, ttyS1 the guest's results
# channel (KTAP from ci/guest/init). The verdict never shares the console.
SERIAL = ["console", "results"]
# The results channel's device in the guest (ci/guest/init's vmtest.results=).
RESULTS_TTY = "ttyS1"
# The guest's busybox: the host's own (busybox-static), not a package of
# another architecture (see arm64.py).
BUSYBOX_DEB = ""
# python3 and perf's python binding (perf.so) in the guest, for
# perf_python_test, and Debian's trace-cmd, for trace_cmd_test: the
# host's binaries are this architecture's.
PACK_PYTHON = True
# Selftest programs and helpers left out of this guest, glob -> why: none,
# x86-64 builds them all. See arm64.py.
LEFT_OUT = {}


def channel_args(paths):
    """QEMU arguments that connect SERIAL's channels to their files:
    paths maps a channel's name to its log file."""
    args = []
    for name in SERIAL:
        args += ["-chardev", f"file,id={name},path={paths[name]}",
                 "-serial", f"chardev:{name}"]
    return args
