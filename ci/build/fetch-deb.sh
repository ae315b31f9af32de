#!/usr/bin/env bash
# usage: fetch-deb.sh [--arch ARCH] SUITE DEST PACKAGE...
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

debarch=
if [ "${1:-}" = --arch ]; then
	debarch=${2:-}
	[[ $debarch =~ ^[a-z0-9]+$ ]] || die "--arch '$debarch': give a Debian architecture such as arm64"
	shift 2
fi
[ $# -ge 3 ] || die "usage: fetch-deb.sh [--arch ARCH] SUITE DEST PACKAGE..."
suite=$1 dest=$2
shift 2
[[ $suite =~ ^[a-z-]+$ ]] || die "suite '$suite': give a Debian suite name such as trixie or sid"

apt_dir=$BUILD/apt/$suite${debarch:+-$debarch}
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dest"
# The machine's own archive URI and keyring, another suite.
uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
uri=${uri:-http://deb.debian.org/debian}
cat >"$apt_dir/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg${debarch:+ arch=$debarch}] $uri $suite main
EOF
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list"
	-o "Dir::Etc::SourceParts=-" -o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::Cache=$apt_dir/cache" -o "Dir::State::status=/var/lib/dpkg/status"
	-o "APT::Get::List-Cleanup=0")
[ -z "$debarch" ] || apt_opts+=(-o "APT::Architecture=$debarch" -o "APT::Architectures=$debarch")

# A day-old list is fresh enough; the suite moves, the run records versions.
if [ -z "$(find "$apt_dir/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null)" ]; then
	log "fetch-deb: updating the package list of $suite (private to $apt_dir)"
	apt-get "${apt_opts[@]}" update -q >"$apt_dir/update.log" 2>&1 ||
		die "apt-get update for $suite failed: see $apt_dir/update.log"
fi

touch "$dest/versions"
for pkg in "$@"; do
	ver=$(apt-cache "${apt_opts[@]}" show --no-all-versions "$pkg" 2>/dev/null |
		sed -n 's/^Version: //p' | head -1)
	[ -n "$ver" ] || die "package $pkg is not in $suite: check the name (apt-cache search on that suite)"
	if grep -qx "$pkg $ver" "$dest/versions"; then
		echo "$pkg $ver"
		continue
	fi
	(cd "$apt_dir/cache/archives" &&
		apt-get "${apt_opts[@]}" download -q "$pkg" >"$apt_dir/download.log" 2>&1) ||
		die "apt-get download $pkg from $suite failed: see $apt_dir/download.log"
	deb=$(ls -t "$apt_dir/cache/archives/${pkg}_"*"${debarch:+_$debarch}.deb" | head -1)
	dpkg-deb -x "$deb" "$dest"
	sed -i "/^$pkg /d" "$dest/versions"
	echo "$pkg $ver" >>"$dest/versions"
	echo "$pkg $ver"
done
