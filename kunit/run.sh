#!/bin/sh
# Run the unwind_user / unwind_deferred KUnit suites under QEMU (x86_64, TCG).
#
# usage: kunit/run.sh [KERNEL_DIR] [--debug] [extra kunit.py run args...]
#
#   KERNEL_DIR  kernel tree with the series applied
#               (default: build/linux of this repository, see `make tree`)
#   --debug     also enable KASAN, lockdep (PROVE_LOCKING) and
#               DEBUG_ATOMIC_SLEEP; uses a separate build directory
#
# The guest gets two CPUs so that the per-CPU parts of the cookie are
# exercised.
#
# Environment: BUILD_DIR overrides the build directory, JOBS the make -j
# value (default 2), KBUILD_LOCK the lock file serialising kernel builds.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$HERE/.." && pwd)/build
KERNEL_DIR=$BUILD/linux
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	KERNEL_DIR=$1
	shift
fi

DEBUG=0
if [ $# -gt 0 ] && [ "$1" = "--debug" ]; then
	DEBUG=1
	shift
fi

JOBS=${JOBS:-2}
LOCK=${KBUILD_LOCK:-$BUILD/.kbuild.lock}

if [ ! -x "$KERNEL_DIR/tools/testing/kunit/kunit.py" ]; then
	echo "error: $KERNEL_DIR is not a kernel tree" >&2
	exit 2
fi
if [ ! -f "$KERNEL_DIR/kernel/unwind/.kunitconfig" ]; then
	echo "error: $KERNEL_DIR lacks kernel/unwind/.kunitconfig; apply the series first" >&2
	exit 2
fi

set -- --kunitconfig=kernel/unwind "$@"
if [ "$DEBUG" = 1 ]; then
	BUILD_DIR=${BUILD_DIR:-$BUILD/kunit-unwind-debug}
	set -- --kunitconfig="$HERE/debug.config" "$@"
else
	BUILD_DIR=${BUILD_DIR:-$BUILD/kunit-unwind}
fi

CC_OPT=
if command -v ccache >/dev/null 2>&1; then
	CC_OPT="CC=ccache gcc"
fi

cd "$KERNEL_DIR"
exec flock "$LOCK" python3 tools/testing/kunit/kunit.py run \
	--arch=x86_64 --build_dir="$BUILD_DIR" --jobs="$JOBS" \
	--timeout=900 --qemu_args="-smp 2" \
	${CC_OPT:+--make_options "$CC_OPT"} "$@"
