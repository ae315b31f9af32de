# shellcheck shell=bash
# Building kernels and perf: the compiler and its cache, perf's switches,
# comparing warnings. Source it (it sources ci/lib.sh and ci/guest/lib.sh,
# which knows the guest architecture's compiler).

. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../guest/lib.sh"

# perf's optional parts that neither the guest's static perf nor perf.so
# needs (ci/build/perf.sh, ci/build/perf-python.sh): off, as 6.12 knows them.
PERF_OFF_SWITCHES=(NO_LIBPERL=1 NO_SLANG=1 NO_GTK2=1 NO_LIBUNWIND=1 NO_LIBDW=1
	NO_LIBTRACEEVENT=1 NO_LIBBPF=1 NO_BPF_SKEL=1 NO_JVMTI=1 NO_LIBCRYPTO=1
	NO_LIBNUMA=1 NO_LIBCAP=1 NO_LIBBABELTRACE=1 NO_LZMA=1 NO_ZSTD=1
	NO_DEMANGLE=1 NO_LIBPFM4=1 NO_SDT=1 NO_AUXTRACE=1 NO_LIBLLVM=1
	NO_CAPSTONE=1 NO_SHELLCHECK=1 NO_LIBDEBUGINFOD=1)

# tools_stamp SRC WORDS...: a hash of SRC's tools/ (committed and
# uncommitted) and WORDS (the build's switches), empty if SRC is not a git
# tree. perf's build reads nothing outside tools/: when the stamp is what
# the last build saw, its make (6-10 s of doing nothing) can be skipped.
tools_stamp() {
	local src=$1
	shift
	git -C "$src" rev-parse -q --verify HEAD:tools >/dev/null 2>&1 || return 0
	{
		echo "$*"
		git -C "$src" rev-parse HEAD:tools
		git -C "$src" diff HEAD -- tools
		git -C "$src" ls-files -o --exclude-standard -z -- tools |
			xargs -0r sha1sum
	} | sha1sum | cut -d' ' -f1
}

# use_kernel_cc: set KCC, the CC= for kernel builds, and KMAKE_ARGS, the
# guest architecture's ARCH= and CROSS_COMPILE= (none for x86_64): gcc through ccache
# (ci/build/ccache-cc: not for what may use .incbin) unless CCACHE=0 or
# ccache is missing, with ccache's settings exported,
# and fixed version strings, so that an unchanged tree relinks nothing.
# (Call it in the shell that runs make, not in $(...): the exports matter.)
use_kernel_cc() {
	export KBUILD_BUILD_USER=vmtest KBUILD_BUILD_HOST=vmtest
	export KBUILD_BUILD_TIMESTAMP='Sun Nov 17 00:00:00 UTC 2024'
	# The guest architecture's cross compiler (ci/guest/arm64.py), else gcc.
	KCC="$(arch CROSS_COMPILE)gcc"
	KMAKE_ARGS=()
	read -ra KMAKE_ARGS <<<"$(arch MAKE_ARGS)"
	if [ "${CCACHE:-1}" = 1 ] && command -v ccache >/dev/null; then
		# Paths under the checkout are hashed relative to it, so a
		# fresh clone in another directory still hits the cache.
		export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
		export CCACHE_SLOPPINESS=time_macros
		# Depend mode hashes the compiler's own -MMD output instead of
		# running the preprocessor a second time: measured on kernel/
		# and mm/ with a cold cache, 99 s against 120 s for gcc alone
		# and 138 s for ccache's default mode; warm, 5.5 s.
		export CCACHE_DEPEND=1
		export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
		KCC="$ROOT/ci/build/ccache-cc $KCC"
	fi
}

# new_warnings BASE NEW: the lines of file NEW that file BASE does not have,
# after dropping line and column numbers (file:12:5: -> file:), so that
# code moving in a file does not make its old warnings look new. Counted:
# a warning that occurs twice in NEW and once in BASE is printed once.
new_warnings() {
	local norm='s/:[0-9]+(:[0-9]+)?: /: /'
	comm -13 <(sed -E "$norm" "$1" | LC_ALL=C sort) \
		<(sed -E "$norm" "$2" | LC_ALL=C sort)
}
