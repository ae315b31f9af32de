#!/usr/bin/env bash
# usage: deps.sh [PACKAGE...]
#
# Install what the harness needs from Debian packages, and the PACKAGEs a
# target needs beyond that (make matrix: its rows' cross compilers).
# Idempotent: packages that are already installed are not touched, so a
# second run costs ~1 s.
. "$(dirname "$0")/../lib.sh"

PKGS=(
	# kernel build
	build-essential bc bison flex libelf-dev libssl-dev cpio kmod rsync
	xz-utils git ccache
	# perf: compressed data ('perf record -z', ci/build/perf.sh)
	libzstd-dev
	# the default kernel tree (Debian's 6.12.y with Debian's patches), and
	# Debian's own configurations of it (make vmtest CONFIG=debian)
	linux-source-6.12 linux-config-6.12
	# guest
	qemu-system-x86 busybox-static
	# make vmtest ARCH=arm64: the aarch64 cross toolchain (kernel, perf,
	# selftests) and QEMU's virt machine (ci/guest/arm64.py)
	gcc-aarch64-linux-gnu g++-aarch64-linux-gnu binutils-aarch64-linux-gnu
	qemu-system-arm
	# selftests: C++ GoogleTest, static, plus 32-bit helpers (the
	# compiler's own multilib package, see multilib_pkg below)
	cmake g++ libgtest-dev
	# host runner and the harness's own tests (Debian's, not PyPI's)
	python3 python3-pytest
	# perf's python binding for the guest's perf_python_test
	# (ci/build/perf-python.sh: Python.h, python3-config, setuptools)
	python3-dev python3-setuptools
	# ftrace's userstacktrace_delay read by a tracer nobody here wrote:
	# the x86-64 guest packs Debian's trace-cmd (selftests/trace_cmd_test),
	# the host reads its recordings (tools/trace_user_stacks.py)
	trace-cmd
	# make bench's plot
	python3-matplotlib
	# checkpatch's SPDX check (scripts/spdxcheck.py)
	python3-ply python3-git
	# make sparse
	sparse
	# make fuzz (and make test's short run): libFuzzer, ASan, UBSan
	clang libclang-rt-dev
	# make send: git send-email and the Perl modules it needs (addresses,
	# SMTP over TLS with authentication)
	git-email libmailtools-perl libauthen-sasl-perl libio-socket-ssl-perl
)

# The 32-bit helpers need g++-N-multilib, not g++-multilib: the latter
# only adds the /usr/include/asm symlink and conflicts with the aarch64
# cross compilers (installing one removes the other). selftests/
# CMakeLists.txt gives -m32 builds that asm directory itself.
multilib_pkg() {
	apt-cache depends g++-multilib 2>/dev/null |
		sed -n 's/^ *Depends: \(g++-[0-9]*-multilib\)$/\1/p' | head -1
}
ml=$(multilib_pkg)
if [ -z "$ml" ]; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get update -q >/dev/null ||
		die "apt-get update failed: check the network or /etc/apt/sources.list"
	ml=$(multilib_pkg)
fi
[ -n "$ml" ] || die "no g++-N-multilib package found behind g++-multilib: is this Debian on amd64?"
PKGS+=("$ml" "$@")

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	log "deps: all ${#PKGS[@]} packages present"
	exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
log "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q || die "apt-get update failed: check the network or /etc/apt/sources.list"
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" ||
	die "apt-get install failed for: ${missing[*]}"
