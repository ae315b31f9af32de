#!/usr/bin/env bash
# usage: perf-python.sh KERNEL_SRC OUT_DIR
#
# Build perf's python binding (tools/perf/util/python.c, the module
# 'perf') from the kernel tree for Debian's /usr/bin/python3, the
# interpreter the guest gets (ci/guest/mkinitramfs.sh, PERF_PYTHON): the
# result is OUT_DIR/perf.so, loaded in the guest by
# /selftests/perf_python_test. The static guest perf (perf.sh) has
# NO_LIBPYTHON; this is a separate, shared build with the same optional
# parts off.
#
# The module is linked without libpython (PYTHON_EMBED_LIBADD=-lutil, the
# flags of perf's embedded interpreter without -lpython3.11): an extension
# takes the Py* symbols from the interpreter that loads it, and Debian's
# python3 has libpython built in, so the guest needs no 7.4 MiB
# libpython3.11.so as well. Makefile.perf is run directly: the wrapper
# tools/perf/Makefile does not pass command line variables on
# (unexport MAKEFLAGS), and PYTHON_EMBED_LIBADD is assigned in
# Makefile.config, so only a command line value overrides it. An
# unchanged tools/ rebuilds nothing.
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || die "usage: perf-python.sh KERNEL_SRC OUT_DIR"
lock_script "$@"
src=$(realpath "$1") out=$(realpath -m "$2")
[ -d "$src/tools/perf" ] || die "$src/tools/perf missing: not a kernel tree"
python=/usr/bin/python3
[ -x "$python" ] && [ -x "$python-config" ] ||
	die "$python or $python-config missing: run 'make deps' (python3-dev)"
suffix=$("$python" -c 'from importlib import machinery; print(machinery.EXTENSION_SUFFIXES[0])')
mkdir -p "$out"
switches=("${PERF_OFF_SWITCHES[@]}")
stamp=$(tools_stamp "$src" "${switches[*]} $suffix")
if [ -n "$stamp" ] && [ -f "$out/perf.so" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
	log "perf python binding unchanged (tools/ as at the last build): $out/perf.so"
	exit 0
fi
# setup.py keeps its own objects: a stale module would be copied again.
rm -rf "$out/stamp" "$out/perf.so" "$out/python_ext_build" "$out/python/perf"*.so
t0=$SECONDS
# Debian's python3 and its python3-config, whatever python3 is first in
# PATH (a pyenv's would give a module for another interpreter).
PATH=/usr/bin:/bin:/usr/sbin:/sbin \
make -s -C "$src/tools/perf" -f Makefile.perf O="$out" -j"$(nproc)" \
	PYTHON="$python" PYTHON_CONFIG="$python-config" PYTHON_EMBED_LIBADD=-lutil \
	"${switches[@]}" WERROR=0 "$out/python/perf$suffix" >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log" >&2
	fail "perf python binding build failed (log: $out/build.log)"
}
cp "$out/python/perf$suffix" "$out/perf.so"
if ldd "$out/perf.so" | grep -q libpython; then
	fail "$out/perf.so needs libpython: the guest's python3 has it built in"
fi
[ -z "$stamp" ] || echo "$stamp" >"$out/stamp"
log "perf python binding built in $((SECONDS - t0)) s: $out/perf.so ($(du -k "$out/perf.so" | cut -f1) KiB)"
