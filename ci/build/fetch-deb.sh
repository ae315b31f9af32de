#!/usr/bin/env bash
# usage: fetch-deb.sh [--arch ARCH] [--libs] SUITE DEST PACKAGE...
#
# --libs: also the shared libraries the PACKAGEs depend on, and theirs:
# every package of the Depends and Pre-Depends closure named lib* or
# zlib1g, the first of alternatives (the closure stops at other packages:
# perl, python3, debconf), so another suite's program runs through that
# suite's own ld-linux with --library-path on what was unpacked.
#
# --arch ARCH: the packages of another Debian architecture (arm64, for the
# arm64 guest's busybox-static), never installed, only unpacked; its list
# is kept apart from the host architecture's (build/apt/SUITE-ARCH).
#
# Fetch PACKAGEs from another Debian suite (trixie, sid, ...) of the same
# archive and unpack them under DEST, without touching the machine's apt
# sources, lists or installed packages: apt runs on a private sources file,
# list and cache directory under build/apt/SUITE (an install from another
# suite would upgrade the machine). Prints "PACKAGE VERSION" for each, and
# keeps them in DEST/versions, so a run can record what it used.
# Idempotent: a package already unpacked at the suite's current version
# is not fetched again.
. "$(dirname "$0")/../guest/lib.sh"

debarch="" libs=""
if [ "${1:-}" = --arch ]; then
	debarch=${2:-}
	[[ $debarch =~ ^[a-z0-9]+$ ]] || die "--arch '$debarch': give a Debian architecture such as arm64"
	shift 2
fi
if [ "${1:-}" = --libs ]; then
	libs=1
	shift
fi
[ $# -ge 3 ] || die "usage: fetch-deb.sh [--arch ARCH] [--libs] SUITE DEST PACKAGE..."
suite=$1 dest=$2
shift 2
[[ $suite =~ ^[a-z-]+$ ]] || die "suite '$suite': give a Debian suite name such as trixie or sid"

apt_dir=$BUILD/apt/$suite${debarch:+-$debarch}
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dest"
# One fetch of a suite at a time (make check's steps and its builds ahead
# of them run side by side): the files below are rewritten on every call,
# and apt-get update takes the lists' lock.
exec {lock_fd}>"$apt_dir.lock"
flock "$lock_fd"
# The machine's own archive URI and keyring, another suite.
uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
uri=${uri:-http://deb.debian.org/debian}
cat >"$apt_dir/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg${debarch:+ arch=$debarch}] $uri $suite main
EOF
# An empty dpkg status of its own: with the machine's, a package installed
# here at a version newer than the suite's (bookworm's linux-perf from
# bookworm-security) is the candidate, which the suite cannot download.
: >"$apt_dir/status"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list"
	-o "Dir::Etc::SourceParts=-" -o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::Cache=$apt_dir/cache" -o "Dir::State::status=$apt_dir/status"
	-o "APT::Get::List-Cleanup=0")
[ -z "$debarch" ] || apt_opts+=(-o "APT::Architecture=$debarch" -o "APT::Architectures=$debarch")

# A day-old list is fresh enough; the suite moves, the run records versions.
if [ -z "$(find "$apt_dir/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null)" ]; then
	log "fetch-deb: updating the package list of $suite (private to $apt_dir)"
	apt-get "${apt_opts[@]}" update -q >"$apt_dir/update.log" 2>&1 ||
		die "apt-get update for $suite failed: see $apt_dir/update.log"
fi

# The packages APT's "depends" output names as dependencies: the first of
# each group of alternatives, a virtual package's first provider.
first_depends() {
	apt-cache "${apt_opts[@]}" depends --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "$@" 2>/dev/null | awk '
		/^  [ |]?(Pre)?Depends: / {
			take = !skip; skip = ($1 ~ /^\|/); provider = 0
			if (take && $2 ~ /^</) provider = 1
			else if (take) print $2
			next
		}
		/^    / { if (provider) print $1; provider = 0 }' | sed 's/:any$//' | sort -u
}

# The closure of library packages of "$@" (see --libs).
with_libs() {
	local -A seen=()
	local todo=("$@") next pkg
	while [ ${#todo[@]} -gt 0 ]; do
		next=()
		for pkg in "${todo[@]}"; do
			[ -z "${seen[$pkg]:-}" ] || continue
			seen[$pkg]=1
			next+=("$pkg")
		done
		[ ${#next[@]} -gt 0 ] || break
		mapfile -t todo < <(first_depends "${next[@]}" | grep -E '^(lib|zlib1g$)')
	done
	printf '%s\n' "${!seen[@]}" | sort
}

[ -z "$libs" ] || mapfile -t pkgs < <(with_libs "$@")
[ -n "$libs" ] || pkgs=("$@")

touch "$dest/versions"
# The suite's version of each package, and the download, in one apt call
# each: every call reads the whole list (a second).
declare -A ver=()
while read -r p v; do
	[ -n "${ver[$p]:-}" ] || ver[$p]=$v
done < <(apt-cache "${apt_opts[@]}" show --no-all-versions "${pkgs[@]}" 2>/dev/null |
	awk '/^Package: /{p = $2} /^Version: /{print p, $2}')
new=()
for pkg in "${pkgs[@]}"; do
	[ -n "${ver[$pkg]:-}" ] || die "package $pkg is not in $suite: check the name (apt-cache search on that suite)"
	grep -qxF "$pkg ${ver[$pkg]}" "$dest/versions" || new+=("$pkg")
done
if [ ${#new[@]} -gt 0 ]; then
	(cd "$apt_dir/cache/archives" &&
		apt-get "${apt_opts[@]}" download -q "${new[@]}" >"$apt_dir/download.log" 2>&1) ||
		die "apt-get download ${new[*]} from $suite failed: see $apt_dir/download.log"
fi
for pkg in "${new[@]}"; do
	deb=$(ls -t "$apt_dir/cache/archives/${pkg}_"*"${debarch:+_$debarch}.deb" | head -1)
	dpkg-deb -x "$deb" "$dest"
	sed -i "/^$pkg /d" "$dest/versions"
	echo "$pkg ${ver[$pkg]}" >>"$dest/versions"
done
for pkg in "${pkgs[@]}"; do
	echo "$pkg ${ver[$pkg]}"
done
