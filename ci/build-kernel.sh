#!/usr/bin/env bash
# usage: build-kernel.sh SRC OBJDIR FRAGMENT...
#
# Configure (ci/kconfig.py: tinyconfig + fragments, every option verified)
# and build bzImage out of tree in OBJDIR, incrementally, through ccache
# (CCACHE=0 turns it off). Two cores: one kernel build at a time, so the
# whole script runs under build/.kbuild.lock.
. "$(dirname "$0")/lib.sh"

[ $# -ge 3 ] || die "usage: build-kernel.sh SRC OBJDIR FRAGMENT..."
if [ -z "${VMTEST_BUILD_LOCKED:-}" ]; then
	mkdir -p "$BUILD"
	VMTEST_BUILD_LOCKED=1 exec flock "$BUILD/.kbuild.lock" "$0" "$@"
fi
src=$(realpath "$1") obj=$(realpath -m "$2")
shift 2
[ -f "$src/Makefile" ] || die "$src is not a kernel tree"

cc=gcc
if [ "${CCACHE:-1}" = 1 ] && command -v ccache >/dev/null; then
	cc="ccache gcc"
	# Paths under the checkout are hashed relative to it, so a fresh clone
	# in another directory still hits the cache.
	export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=time_macros
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
fi
# Reproducible version strings: an unchanged tree relinks nothing.
export KBUILD_BUILD_USER=vmtest KBUILD_BUILD_HOST=vmtest
export KBUILD_BUILD_TIMESTAMP='Sun Nov 17 00:00:00 UTC 2024'

/usr/bin/python3 "$ROOT/ci/kconfig.py" --src "$src" --out "$obj" "$@"
t0=$SECONDS
make -s -C "$src" O="$obj" CC="$cc" -j"$(nproc)" bzImage
log "kernel built in $((SECONDS - t0)) s: $obj/arch/x86/boot/bzImage"
