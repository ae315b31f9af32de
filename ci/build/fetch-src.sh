#!/usr/bin/env bash
# usage: fetch-src.sh SUITE DEST SOURCE_PACKAGE...
#
# Fetch the Debian source packages SOURCE_PACKAGEs of SUITE (bookworm,
# sid, ...) from the machine's Debian archive and unpack each, Debian's
# patches applied (dpkg-source -x), as DEST/NAME-VERSION/, without
# touching the machine's apt sources, lists or packages: as
# ci/build/fetch-deb.sh does for binary packages, apt runs on a private
# sources file (deb-src lines), list and cache directory under
# build/apt/SUITE-src. The index is signed (the archive keyring), the
# files it names are checked against its hashes by apt.
#
# Prints "NAME VERSION DIR" for each and keeps "NAME VERSION" lines in
# DEST/versions. Idempotent: a package already unpacked at the suite's
# current version is not fetched again.
. "$(dirname "$0")/../guest/lib.sh"

[ $# -ge 3 ] || die "usage: fetch-src.sh SUITE DEST SOURCE_PACKAGE..."
suite=$1 dest=$2
shift 2
[[ $suite =~ ^[a-z-]+$ ]] || die "suite '$suite': give a Debian suite name such as bookworm or sid"
command -v dpkg-source >/dev/null || die "dpkg-source missing: install dpkg-dev"

apt_dir=$BUILD/apt/$suite-src
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/dl" "$dest"
dest=$(cd "$dest" && pwd)
uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
uri=${uri:-http://deb.debian.org/debian}
cat >"$apt_dir/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main
EOF
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list"
	-o "Dir::Etc::SourceParts=-" -o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::Cache=$apt_dir/cache" -o "Dir::State::status=/var/lib/dpkg/status"
	-o "APT::Get::List-Cleanup=0")

if [ -z "$(find "$apt_dir/lists" -maxdepth 1 -name '*Sources*' -mmin -1440 2>/dev/null)" ]; then
	log "fetch-src: updating the source list of $suite (private to $apt_dir)"
	apt-get "${apt_opts[@]}" update -q >"$apt_dir/update.log" 2>&1 ||
		die "apt-get update for $suite's sources failed: see $apt_dir/update.log"
fi

touch "$dest/versions"
for pkg in "$@"; do
	[[ $pkg =~ ^[a-z0-9][a-z0-9.+-]+$ ]] || die "'$pkg' is not a source package name"
	ver=$(apt-cache "${apt_opts[@]}" showsrc --only-source "$pkg" 2>/dev/null |
		sed -n 's/^Version: //p' | sort -V | tail -1)
	[ -n "$ver" ] || die "source package $pkg is not in $suite"
	upver=${ver#*:}
	upver=${upver%-*}
	dir=$dest/$pkg-$upver
	if grep -qx "$pkg $ver" "$dest/versions" && [ -d "$dir" ]; then
		echo "$pkg $ver $dir"
		continue
	fi
	rm -rf "$apt_dir/dl/$pkg" "$dir"
	mkdir -p "$apt_dir/dl/$pkg"
	(cd "$apt_dir/dl/$pkg" &&
		apt-get "${apt_opts[@]}" source --download-only -q "$pkg=$ver" >download.log 2>&1) ||
		die "apt-get source $pkg=$ver from $suite failed: see $apt_dir/dl/$pkg/download.log"
	dsc=$(ls "$apt_dir/dl/$pkg/"*.dsc | head -1)
	# The .dsc's own signature needs debian-keyring; apt checked the
	# files against the signed index already.
	(cd "$apt_dir/dl/$pkg" && dpkg-source --no-check -x "${dsc##*/}" tree >extract.log 2>&1) ||
		die "dpkg-source -x $dsc failed: see $apt_dir/dl/$pkg/extract.log"
	mv "$apt_dir/dl/$pkg/tree" "$dir"
	sed -i "/^$pkg /d" "$dest/versions"
	echo "$pkg $ver" >>"$dest/versions"
	echo "$pkg $ver $dir"
done
