#!/usr/bin/env bash
# usage: stale-int3.sh BZIMAGE [BOOTS] [ACCEL]
#
# Does this x86-64 kernel meet QEMU TCG's stale int3 (doc/harness.md,
# "What fails a run")? Boots BZIMAGE BOOTS times (default 3) with ACCEL
# (default tcg,thread=multi, as make vmtest) and an init that toggles the
# raw_syscalls events 1500 times while four loops make system calls: each
# toggle patches static keys (text_poke_bp()), the race's trigger. Prints
# each boot's verdict (below) and how many met the fault. Any kernel will
# do, with or without the series (the unpatched base is the question this
# answers); the initramfs's busybox is make vmtest's
# (build/out/linux/initramfs.cpio.gz). Logs: build/out/stale-int3/.
. "$(dirname "$0")/../lib.sh"

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
	die "usage: stale-int3.sh BZIMAGE [BOOTS] [ACCEL]"
fi
[ -f "$1" ] || die "$1: no such kernel image"
base=$BUILD/out/linux/initramfs.cpio.gz
[ -f "$base" ] || die "$base missing: run 'make initramfs' first"
# Its guests take the build lock as make vmtest's do: a guest beside
# them would be timed on a host they share.
lock_script "$@"
image=$(realpath "$1") boots=${2:-3} accel=${3:-tcg,thread=multi}
out=$BUILD/out/stale-int3
rm -rf "$out" && mkdir -p "$out/overlay"

# A second cpio after make vmtest's: its /init replaces the harness's.
cat >"$out/overlay/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tracefs tracefs /sys/kernel/tracing
echo "stale-int3: $(uname -r), $(nproc) CPUs"
for i in 1 2 3 4; do
	(while :; do cat /proc/self/stat >/dev/null; done) &
done
ev=/sys/kernel/tracing/events/raw_syscalls
n=0
while [ $n -lt 1500 ]; do
	echo 1 >$ev/sys_enter/enable; echo 1 >$ev/sys_exit/enable
	echo 0 >$ev/sys_enter/enable; echo 0 >$ev/sys_exit/enable
	n=$((n + 1))
done
echo "stale-int3: $n toggles done"
reboot -f
EOF
chmod +x "$out/overlay/init"
(cd "$out/overlay" && echo init | cpio -o -H newc 2>/dev/null | gzip) >"$out/overlay.cpio.gz"
cat "$base" "$out/overlay.cpio.gz" >"$out/initramfs.cpio.gz"

# Each boot's verdict, by the rule make vmtest's runner uses
# (ci/console.py emulator_fault: the first splat an int3 oops in kernel
# mode, its Code: line read): "met" (no int3 left where it hit, or an
# int3 there again), "clean" (the loop finished, no splat), or
# "inconclusive" (another splat, or the guest stopped before the loop's
# end: it says nothing either way).
verdict() {
	(cd "$ROOT" && /usr/bin/python3 -c '
import sys
from ci.console import emulator_fault, kind
text = open(sys.argv[1], errors="replace").read()
fault = emulator_fault(text)
if fault:
    print("met:", fault)
elif any(kind(l) for l in text.splitlines()):
    print("inconclusive: another splat first")
elif "toggles done" in text:
    print("clean: the loop finished")
else:
    print("inconclusive: the guest stopped before the loop ended")
' "$1")
}

# make vmtest's x86-64 guest (ci/guest/x86_64.py): its QEMU, boot
# parameters, vCPUs and machine, with ACCEL for its -accel.
mapfile -t guest < <(cd "$ROOT" && /usr/bin/python3 -c '
import sys
from ci.guest import x86_64 as a
args = list(a.TCG_ARGS)
args[args.index("-accel") + 1] = sys.argv[1]
print(a.QEMU, a.CMDLINE, a.SMP, *args, sep="\n")
' "$accel")
[ "${#guest[@]}" -gt 3 ] || die "ci/guest/x86_64.py: no guest definition"
command -v "${guest[0]}" >/dev/null || die "${guest[0]} missing: run 'make deps'"

met=0 clean=0
for i in $(seq "$boots"); do
	log=$out/boot$i.log
	t0=$SECONDS
	# panic=-1: an oops in the scheduler kills the guest, which reboots
	# out of QEMU (-no-reboot); the host's limit is for a hung guest.
	timeout 900 "${guest[0]}" "${guest[@]:3}" -smp "${guest[2]}" -m 2G \
		-nodefaults -display none -no-reboot \
		-kernel "$image" -initrd "$out/initramfs.cpio.gz" \
		-chardev "file,id=console,path=$log" -serial chardev:console \
		-append "${guest[1]}" || true
	touch "$log"
	v=$(verdict "$log")
	log "boot $i ($accel, $((SECONDS - t0)) s): $v"
	case $v in
	met:*) met=$((met + 1)) ;;
	clean:*) clean=$((clean + 1)) ;;
	esac
done
log "$met of $boots boots met QEMU's stale int3, $clean finished clean, $((boots - met - clean)) inconclusive ($("${guest[0]}" --version | head -1)); logs: $out/"
