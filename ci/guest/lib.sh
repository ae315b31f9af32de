# shellcheck shell=bash
# The guest: its architecture's settings and one boot of it. Source it
# (it sources ci/lib.sh).

. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# boot_guest KOBJ INITRD DIR SMP TIMEOUT [ci/guest/vm.py options...]: one
# boot of the guest under the build lock: the guest is timed and samples
# under TCG, so builds stay off the two cores. vm.py, the one writer of the
# run directory DIR, makes it anew with the kernel's .config and the
# initramfs's program lists; it fails only on a setup error, and what the
# guest did is left in DIR for the caller's verdict.
boot_guest() {
	local kobj=$1 initrd=$2 dir=$3 smp=$4 timeout=$5
	shift 5
	VMTEST_PROBE_CACHE=$BUILD/kvm-probe.json with_build_lock \
		/usr/bin/python3 -m ci.guest.vm \
		--kernel "$kobj/$(arch KERNEL_IMAGE)" --kernel-config "$kobj/.config" \
		--initrd "$initrd" \
		--out "$dir" --smp "$smp" --timeout "$timeout" "$@"
}

# arch NAME: one setting of the guest architecture, VMTEST_ARCH (make's
# ARCH=; default x86_64). ci/guest/x86_64.py and ci/guest/arm64.py are the only
# places that know them (image path, make target, QEMU arguments); a list
# prints as words. An unknown architecture is a setup error (exit 2).
arch() {
	/usr/bin/python3 -m ci.guest.arch "${VMTEST_ARCH:-x86_64}" "$1" ||
		die "no guest architecture '${VMTEST_ARCH:-}' (VMTEST_ARCH, make's ARCH=)"
}
