#!/usr/bin/env bash
# usage: kernel.sh SRC OBJDIR KCONFIG_ARGS...
#
# Configure (ci/build/kconfig.py: tinyconfig + fragments, every option
# verified; KCONFIG_ARGS are its arguments, e.g. --config normal for the
# table's fragments)
# and build the guest kernel image out of tree in OBJDIR, incrementally, through ccache
# (CCACHE=0 turns it off). Two cores: one kernel build at a time, so the
# whole script runs under build/.kbuild.lock.
. "$(dirname "$0")/lib.sh"

[ $# -ge 3 ] || die "usage: kernel.sh SRC OBJDIR KCONFIG_ARGS..."
lock_script "$@"
src=$(realpath "$1") obj=$(realpath -m "$2")
shift 2
[ -f "$src/Makefile" ] || die "$src is not a kernel tree"

use_kernel_cc
/usr/bin/python3 -m ci.build.kconfig --src "$src" --out "$obj" "$@"
t0=$SECONDS
make -s -C "$src" O="$obj" "${KMAKE_ARGS[@]}" CC="$KCC" -j"$(nproc)" "$(arch MAKE_TARGET)" ||
	fail "the kernel does not build: $src in $obj (errors above)"
log "kernel built in $((SECONDS - t0)) s: $obj/$(arch KERNEL_IMAGE)"
