"""The arm64 guest (make vmtest ARCH=arm64), as data: QEMU's virt machine
with GICv3, built with Debian's aarch64 cross toolchain. The names are
those of x86_64.py; what differs is said here."""

NAME = "arm64"
QEMU = "qemu-system-aarch64"
KERNEL_IMAGE = "arch/arm64/boot/Image"
MAKE_TARGET = "Image"
CROSS_COMPILE = "aarch64-linux-gnu-"
# Kbuild's own variables: every make of the kernel (config, build) and of
# tools/perf gets them on its command line.
MAKE_ARGS = ["ARCH=arm64", f"CROSS_COMPILE={CROSS_COMPILE}"]
# arm64 has no tiny.config of its own.
TINY_CONFIGS = ["kernel/configs/tiny-base.config", "kernel/configs/tiny.config"]
GUEST_CONFIG = "ci/guest/config/arm64.config"
# --series-if-possible: a tree whose series does not enable the feature on
# arm64 yet (it selects HAVE_UNWIND_USER_FP on x86 alone) is built and
# booted without it, with a note, and its feature tests skip as "feature
# not expected": a run where every guest test skipped exits 4, a failure.
# On a tree that enables it the verdict expects the feature (report.py).
SERIES_MODE = "--series-if-possible"
# Two vCPUs: TCG on a two-core host runs one vCPU thread per core.
SMP = 2
# The console is the first PL011 (ttyAMA0). Pseudo-NMIs on: perf's PMU
# interrupt is then an NMI, as the deferred requests must survive.
# QEMU 7.2's virt has one non-secure PL011, so the results channel is a
# virtio console (hvc0, vmtest.results= tells ci/guest/init).
CMDLINE = ("console=ttyAMA0 earlycon=pl011,0x9000000 panic=-1 "
           "rdinit=/init no_hash_pointers irqchip.gicv3_pseudo_nmi=1 "
           "vmtest.results=hvc0")
PROBE_CMDLINE = "earlycon=pl011,0x9000000 console=ttyAMA0 panic=-1"
# KVM only on an aarch64 host; on any other host it is TCG without a probe.
KVM_HOSTS = ["aarch64"]
KVM_ARGS = ["-machine", "virt,gic-version=3,accel=kvm", "-cpu", "host"]
# -cpu max: every feature TCG emulates (PMUv3, pointer authentication,
# BTI); pauth-impdef: QEMU's cheap signing algorithm instead of QARMA5,
# whose emulation costs a large share of every function call under TCG.
TCG_ARGS = ["-machine", "virt,gic-version=3", "-cpu", "max,pauth-impdef=on",
            "-accel", "tcg,thread=multi"]
# Kernel options with which a TCG guest boots with every vCPU on one host
# thread unless TCG_THREAD= says otherwise (ci/guest/vm.py). QEMU 7.2's
# vCPU threads can go on running a translation of kernel text that
# another vCPU patched; with CONFIG_JUMP_LABEL a static key enabled on one
# vCPU then stays off on the other, silently on arm64 (a branch left a
# NOP, no int3 to meet): Debian's arm64 kernel, 2026-12-01, a helper's
# syscall_trace_enter() ran 20013 times (a kprobe's count) while the
# sys_enter tracepoint enabled just before its exec fired 0 times, in 4
# and 1 of two loops' 60 runs with threads, in none of 60 on one thread.
# The harness's own arm64 configurations have no CONFIG_JUMP_LABEL.
ONE_THREAD_CONFIGS = ["CONFIG_JUMP_LABEL"]
SERIAL = ["console", "results"]
RESULTS_TTY = "hvc0"
# CMake cross build of the selftests (selftests/CMakeLists.txt builds
# GoogleTest from Debian's sources, /usr/src/googletest, with them).
CMAKE_ARGS = ["-DCMAKE_SYSTEM_NAME=Linux", "-DCMAKE_SYSTEM_PROCESSOR=aarch64",
              f"-DCMAKE_C_COMPILER={CROSS_COMPILE}gcc",
              f"-DCMAKE_CXX_COMPILER={CROSS_COMPILE}g++",
              "-DGTEST_FROM_SOURCE=/usr/src/googletest"]
# busybox-static of Debian bookworm's arm64 port, fetched and unpacked
# (never installed) by ci/build/fetch-deb.sh --arch arm64.
BUSYBOX_DEB = "busybox-static"
# No python3 or trace-cmd in this guest: Debian's on the host are x86-64
# binaries, and aarch64 ones with their libraries are not fetched.
PACK_PYTHON = False
# What the arm64 guest leaves out, glob -> why: named in the run's
# summary and its counts (not applicable), never silently dropped.
LEFT_OUT = {
    "compat_test": "x86-only: ia32 compat tasks built with gcc -m32",
    "*_32": "x86-only: the helpers' ia32 builds (gcc -m32)",
    "ldt_stack": "x86-only: compat stacks behind an LDT stack segment",
    "perf_python_test": "no python3 and perf.so in the arm64 guest "
                        "(the host's python3 is x86-64)",
    "trace_cmd_test": "no trace-cmd in the arm64 guest (the host's Debian "
                      "trace-cmd is x86-64)",
}


def channel_args(paths):
    """The console on the PL011, the results on a virtio console port.
    max_ports=1: no multiport, so the kernel adds hvc0 while it probes the
    device, before init runs."""
    return ["-chardev", f"file,id=console,path={paths['console']}",
            "-serial", "chardev:console",
            "-chardev", f"file,id=results,path={paths['results']}",
            "-device", "virtio-serial-device,max_ports=1",
            "-device", "virtconsole,chardev=results"]
