#!/usr/bin/env bash
# usage: build-kernel.sh SRC OBJDIR FRAGMENT...
#
# Configure (ci/kconfig.py: tinyconfig + fragments, every option verified)
# and build the guest kernel image out of tree in OBJDIR, incrementally, through ccache
# (CCACHE=0 turns it off). Two cores: one kernel build at a time, so the
# whole script runs under build/.kbuild.lock.
. "$(dirname "$0")/lib.sh"

[ $# -ge 3 ] || die "usage: build-kernel.sh SRC OBJDIR FRAGMENT..."
if [ -z "${VMTEST_BUILD_LOCKED:-}" ]; then
	mkdir -p "$BUILD"
	VMTEST_BUILD_LOCKED=1 exec flock "$KBUILD_LOCK" "$0" "$@"
fi
src=$(realpath "$1") obj=$(realpath -m "$2")
shift 2
[ -f "$src/Makefile" ] || die "$src is not a kernel tree"

use_kernel_cc
cc=$KCC
# Reproducible version strings: an unchanged tree relinks nothing.
export KBUILD_BUILD_USER=vmtest KBUILD_BUILD_HOST=vmtest
export KBUILD_BUILD_TIMESTAMP='Sun Nov 17 00:00:00 UTC 2024'

/usr/bin/python3 "$ROOT/ci/kconfig.py" --src "$src" --out "$obj" "$@"
t0=$SECONDS
make -s -C "$src" O="$obj" CC="$cc" -j"$(nproc)" "$(arch MAKE_TARGET)"
log "kernel built in $((SECONDS - t0)) s: $obj/$(arch KERNEL_IMAGE)"
