"""Everything the harness knows about the guest architecture, as data."""

QEMU = "qemu-system-x86_64"
KERNEL_IMAGE = "arch/x86/boot/bzImage"
MAKE_TARGET = "bzImage"
# tinyconfig's fragments: the generic ones, then this architecture's.
TINY_CONFIGS = ["kernel/configs/tiny-base.config", "kernel/configs/tiny.config",
                "arch/x86/configs/tiny.config"]
# Boot parameters. panic=-1 reboots at once on a panic, and -no-reboot
# turns that reboot into QEMU's exit, so a panic ends the run in seconds.
CMDLINE = ("console=ttyS0,115200 panic=-1 rdinit=/init "
           "tsc=reliable no_hash_pointers")
# The KVM probe (qemu/accel.py): the earliest console line, then nothing.
PROBE_CMDLINE = "earlyprintk=serial,ttyS0,115200 console=ttyS0 panic=-1"
KVM_ARGS = ["-machine", "q35,accel=kvm", "-cpu", "host"]
TCG_ARGS = ["-machine", "q35", "-cpu", "max", "-accel", "tcg,thread=multi"]
# Two serial ports: ttyS0 is the kernel console, ttyS1 the guest's results
# channel (KTAP from qemu/init). The verdict never shares the console.
SERIAL = ["console", "results"]
