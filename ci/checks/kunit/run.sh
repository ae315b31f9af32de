#!/usr/bin/env bash
# Run the unwind_user / unwind_sframe / unwind_deferred KUnit suites alone, through the
# kernel's kunit.py (x86_64 under QEMU, TCG), with ci/'s helpers: the one
# build lock, ccache, the exit codes.
#
# usage: ci/checks/kunit/run.sh [KERNEL_DIR] [--debug] [extra kunit.py run args...]
#
#   KERNEL_DIR  kernel tree with the series applied
#               (default: build/linux of this repository, see `make tree`)
#   --debug     add what CONFIG=debug adds (ci/build/configs.py: KASAN, lockdep,
#               DEBUG_ATOMIC_SLEEP); uses a separate build directory
#
# The guest gets two CPUs (kunit.py's x86_64 config is uniprocessor: SMP
# is added) so that the per-CPU parts of the cookie are exercised.
#
# Environment: BUILD_DIR overrides the build directory, JOBS the make -j
# value (default: the number of CPUs).
. "$(dirname "$0")/../../series/lib.sh"
. "$(dirname "$0")/../../build/lib.sh"

# kunit.py's own QEMU run is x86_64's here; arm64 runs the same suites at
# every boot of its guest.
[ "${VMTEST_ARCH:-x86_64}" = x86_64 ] ||
	die "make kunit runs on x86_64 only: on arm64 the suites run at every boot of 'make vmtest ARCH=arm64'"

KERNEL_DIR=$WORKTREE
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	KERNEL_DIR=$(realpath "$1")
	shift
fi
DEBUG=0
if [ $# -gt 0 ] && [ "$1" = "--debug" ]; then
	DEBUG=1
	shift
fi

[ -x "$KERNEL_DIR/tools/testing/kunit/kunit.py" ] ||
	die "$KERNEL_DIR is not a kernel tree: give a 6.12 tree with the series, or run 'make tree'"
[ -f "$KERNEL_DIR/kernel/unwind/.kunitconfig" ] ||
	die "$KERNEL_DIR lacks kernel/unwind/.kunitconfig: apply the series first (make apply KERNEL=$KERNEL_DIR)"

set -- --kunitconfig=kernel/unwind --kconfig_add CONFIG_SMP=y "$@"
if [ "$DEBUG" = 1 ]; then
	BUILD_DIR=${BUILD_DIR:-$BUILD/kunit-unwind-debug}
	# What CONFIG=debug adds to the guest's kernel (ci/build/configs.py).
	mapfile -t extra < <(/usr/bin/python3 -m ci.build.configs extra debug)
	[ "${#extra[@]}" -gt 0 ] || die "ci/build/configs.py gives CONFIG=debug no fragments"
	set -- "${extra[@]/#/--kunitconfig=$ROOT/}" "$@"
else
	BUILD_DIR=${BUILD_DIR:-$BUILD/kunit-unwind}
fi

use_kernel_cc
cd "$KERNEL_DIR"
with_build_lock /usr/bin/python3 tools/testing/kunit/kunit.py run \
	--arch=x86_64 --build_dir="$BUILD_DIR" --jobs="${JOBS:-$(nproc)}" \
	--timeout=900 --qemu_args="-smp 2" \
	--make_options "CC=$KCC" "$@"
