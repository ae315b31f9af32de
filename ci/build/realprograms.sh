#!/usr/bin/env bash
# usage: realprograms.sh OUT_DIR
#
# make realstacks' programs, nobody's here: xz, gzip and sqlite3 of Debian
# bookworm (the guest's base), each in three builds, and what the guest
# needs to run and judge them, under OUT_DIR/guest/ (packed as
# /realstacks by ci/guest/mkinitramfs.sh, REALSTACKS_DIR):
#
#   deb/PROG      Debian's own binary, as packaged (no frame pointers, no
#                 .sframe), run on Debian's shared libraries (lib/)
#   fp/PROG       built from its Debian source (Debian's patches and
#                 dpkg-buildflags) with -fno-omit-frame-pointer
#                 -mno-omit-leaf-frame-pointer, by the machine's gcc and
#                 binutils
#   sframe/PROG   the same source and flags with -fomit-frame-pointer and
#                 -Wa,--gsframe, assembled and linked by Debian sid's
#                 binutils (SFrame version 3; ci/build/toolchains.sh)
#   lib/          bookworm's ld.so, libc, libm, libgcc_s (backtrace()'s
#                 unwinder) and the libraries Debian's binaries link
#                 (liblzma, libsqlite3, libreadline, libtinfo, zlib);
#                 every build runs on these, through
#                 lib/ld-linux-x86-64.so.2 --library-path lib
#   shim.so       the LD_PRELOAD shim (selftests/realstacks/build-shim.sh:
#                 frame pointers and SFrame, by sid's binutils)
#   run.sh        the guest's runner (selftests/realstacks/run.sh), and
#   overhead.sh   its plan "overhead" (make overhead)
#   input/        the workloads' inputs, made here, the same every time
#   manifest      every package, source and tool used, with its version
#
# A program's own library is built into the program, with the program's
# flags: xz links liblzma statically (--disable-shared), sqlite3 its
# libsqlite3 (Debian's own sqlite3 links libsqlite3.so.0). The C library
# is Debian's in every build: glibc 2.36 without frame pointers or
# .sframe (doc/realstacks.md says what that costs).
#
# Idempotent: sources and packages are fetched once per version, a build
# whose source, flags and tools are unchanged is not run again.
. "$(dirname "$0")/../guest/lib.sh"

[ $# -eq 1 ] || die "usage: realprograms.sh OUT_DIR"
[ "$(uname -m)" = x86_64 ] && [ "${VMTEST_ARCH:-x86_64}" = x86_64 ] ||
	die "make realstacks is x86-64 only (the shim's stubs are x86-64 assembly)"
mkdir -p "$1"
out=$(cd "$1" && pwd)
guest=$out/guest
tc=$BUILD/toolchains
PROGRAMS=(xz gzip sqlite3)
BUILDS=(fp sframe)

# sqlite3's build generates sources with Tcl (Debian's build-depends)
command -v tclsh >/dev/null || bash "$ROOT/ci/build/deps.sh" tcl ||
	die "could not install tcl (sqlite3's build needs tclsh)"
for tool in gcc dpkg-buildflags tclsh make; do
	command -v $tool >/dev/null || die "$tool missing: run 'make deps'"
done
[ -x "$tc/sid/bin/as" ] || bash "$ROOT/ci/build/toolchains.sh" "$tc"
[ -x "$tc/sid/bin/as" ] ||
	die "Debian sid's binutils missing from $tc (ci/build/toolchains.sh): no SFrame builds"

# Debian's binaries and the shared libraries every build runs on.
DEBS=(libc6 libgcc-s1 xz-utils liblzma5 gzip sqlite3 libsqlite3-0
	libreadline8 libtinfo6 zlib1g)
log "realprograms: Debian bookworm's packages"
bash "$ROOT/ci/build/fetch-deb.sh" bookworm "$out/debs" "${DEBS[@]}" >/dev/null ||
	die "could not fetch bookworm's packages (ci/build/fetch-deb.sh)"
log "realprograms: Debian bookworm's sources"
bash "$ROOT/ci/build/fetch-src.sh" bookworm "$out/src" xz-utils gzip sqlite3 >/dev/null ||
	die "could not fetch bookworm's sources (ci/build/fetch-src.sh)"

srcdir() { # srcdir SOURCE_PACKAGE: its unpacked tree
	local v
	v=$(sed -n "s/^$1 //p" "$out/src/versions")
	v=${v#*:}
	echo "$out/src/$1-${v%-*}"
}
# Every file of a tree the same age (its changelog's date): Debian's
# patches touch configure.ac, and make would then want autoconf to
# rebuild what the tarball ships built (Debian's rules run
# dh_autoreconf; the patches' configure.ac changes are a Werror switch
# (gzip) and #line directives in the amalgamation (sqlite3)).
settle() {
	local d=$1 stamp
	stamp=$(date -d "$(dpkg-parsechangelog -l "$d/debian/changelog" -S Date)" +%s)
	[ -e "$d/.settled" ] && return
	find "$d" -exec touch -h -d "@$stamp" {} +
	touch "$d/.settled"
}

# flags PACKAGE BUILD: "CFLAGS|CPPFLAGS|LDFLAGS" as Debian's rules set them
# for PACKAGE, without -g (the guest needs no debug info), plus BUILD's.
flags() {
	local opts=
	case $1 in
	sqlite3) opts="hardening=+all future=+lfs" ;;
	esac
	local cflags cppflags ldflags
	cflags=$(DEB_BUILD_MAINT_OPTIONS=$opts dpkg-buildflags --get CFLAGS)
	cppflags=$(DEB_BUILD_MAINT_OPTIONS=$opts dpkg-buildflags --get CPPFLAGS)
	ldflags=$(DEB_BUILD_MAINT_OPTIONS=$opts dpkg-buildflags --get LDFLAGS)
	cflags=$(echo " $cflags " | sed 's/ -g / /g; s/ -ffile-prefix-map=[^ ]* / /g')
	case $2 in
	fp) cflags+=" -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer" ;;
	sframe) cflags+=" -fomit-frame-pointer -Wa,--gsframe" ;;
	esac
	if [ "$1" = sqlite3 ]; then
		# debian/rules' own CFLAGS: the library's compile-time options
		cflags+=" -O2 -fno-strict-aliasing $(grep -oE -- '-DSQLITE_[A-Z0-9_]+(=[0-9]+)?' \
			"$(srcdir sqlite3)/debian/rules" | tr '\n' ' ')"
		ldflags+=" -Wl,--as-needed"
	fi
	echo "$(echo $cflags)|$(echo $cppflags)|$(echo $ldflags)"
}

cc_of() { # cc_of BUILD: the compiler command
	case $1 in
	sframe) echo "gcc -B$tc/sid/bin/" ;;
	*) echo gcc ;;
	esac
}

# build PROG BUILD: OUT/work/BUILD/PROG, the binary copied to guest/BUILD/PROG
build() {
	local prog=$1 b=$2 pkg src dir f cflags cppflags ldflags cc stamp bin
	case $prog in
	xz) pkg=xz-utils ;;
	*) pkg=$prog ;;
	esac
	src=$(srcdir "$pkg")
	settle "$src"
	dir=$out/work/$b/$prog
	f=$(flags "$pkg" "$b")
	IFS='|' read -r cflags cppflags ldflags <<<"$f"
	cc=$(cc_of "$b")
	stamp="$pkg $(sed -n "s/^$pkg //p" "$out/src/versions")|$cc|$f|$(gcc --version | head -1)|$(cat "$tc/sid/version")|$(declare -f build flags cc_of settle | md5sum)"
	if [ -x "$guest/$b/$prog" ] && [ "$(cat "$dir/stamp" 2>/dev/null)" = "$stamp" ]; then
		return
	fi
	log "realprograms: $prog ($pkg), build $b"
	rm -rf "$dir"
	mkdir -p "$dir" "$guest/$b"
	local conf=(CC="$cc" CFLAGS="$cflags" CPPFLAGS="$cppflags" LDFLAGS="$ldflags")
	(
		cd "$dir"
		case $prog in
		xz)
			"$src/configure" --disable-shared --enable-static --disable-nls \
				--disable-doc --disable-scripts --disable-lzmadec \
				--disable-lzmainfo --disable-xzdec --disable-lzma-links \
				"${conf[@]}"
			make -j"$(nproc)" -C src/liblzma
			make -j"$(nproc)" -C src/xz
			bin=src/xz/xz
			;;
		gzip)
			"$src/configure" --disable-nls "${conf[@]}"
			make -j"$(nproc)"
			bin=gzip
			;;
		sqlite3)
			# Debian's configure options, less the Tcl extension and
			# readline (not used by a shell that reads a file);
			# the library linked into the shell
			"$src/configure" --disable-shared --enable-static \
				--enable-threadsafe --enable-load-extension \
				--enable-json --enable-fts4 --enable-fts5 \
				--disable-amalgamation --disable-tcl \
				--disable-readline --disable-editline "${conf[@]}"
			make -j"$(nproc)" AMALGAMATION_LINE_MACROS=--linemacros=0 sqlite3
			bin=sqlite3
			;;
		esac
		# libtool's wrapper script, if any, is not the program
		[ -x ".libs/$bin" ] && bin=.libs/$bin
		cp "$bin" "$guest/$b/$prog"
	) >"$out/work/$b-$prog.log" 2>&1 || {
		tail -20 "$out/work/$b-$prog.log" >&2
		fail "building $prog ($b) failed: see $out/work/$b-$prog.log"
	}
	echo "$stamp" >"$dir/stamp"
}

for b in "${BUILDS[@]}"; do
	for prog in "${PROGRAMS[@]}"; do
		build "$prog" "$b"
	done
done

# Debian's binaries, and the libraries they and the builds run on.
mkdir -p "$guest/deb" "$guest/lib" "$guest/input"
for f in usr/bin/xz bin/gzip usr/bin/sqlite3; do
	[ -f "$out/debs/$f" ] || die "$out/debs/$f missing: not in the package any more?"
	cp "$out/debs/$f" "$guest/deb/${f##*/}"
done
for so in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libgcc_s.so.1 liblzma.so.5 \
	libz.so.1 libsqlite3.so.0 libreadline.so.8 libtinfo.so.6; do
	f=$(find "$out/debs/lib" "$out/debs/usr/lib" -name "$so" 2>/dev/null | head -1)
	[ -n "$f" ] || die "$so not found in bookworm's packages under $out/debs"
	cp -L "$f" "$guest/lib/$so"
done

# The shim, with frame pointers and SFrame (sid's binutils), checked so
# (build-shim.sh): it must never be the weak frame of a stack.
log "realprograms: the shim"
sh "$ROOT/selftests/realstacks/build-shim.sh" "$guest/shim.so" "$tc/sid/bin" ||
	fail "building the shim failed"
cp "$ROOT/selftests/realstacks/run.sh" "$ROOT/selftests/realstacks/overhead.sh" "$guest/"
chmod +x "$guest/run.sh" "$guest/overhead.sh"

# Inputs: 256 KiB of text from a fixed seed; sqlite3's two scripts.
/usr/bin/python3 "$ROOT/selftests/realstacks/inputs.py" "$guest/input"

# What each build is: the SFrame builds must carry a .sframe segment,
# the others none; every build's dynamic dependencies.
for b in deb fp sframe; do
	for prog in "${PROGRAMS[@]}"; do
		has=$(readelf -lW "$guest/$b/$prog" | grep -c GNU_SFRAME || true)
		want=0
		[ "$b" = sframe ] && want=1
		[ "$has" = "$want" ] ||
			fail "$b/$prog: $has .sframe segments, $want expected"
	done
done
{
	echo "# make realstacks' programs (ci/build/realprograms.sh), $(date -u +%F)"
	echo "host gcc: $(gcc --version | head -1)"
	echo "host binutils: $(ld --version | head -1)"
	echo "sframe binutils: $(cat "$tc/sid/version")"
	echo "tclsh: $(echo 'puts [info patchlevel]' | tclsh)"
	sed 's/^/deb: /' "$out/debs/versions"
	sed 's/^/source: /' "$out/src/versions"
	for b in fp sframe; do
		for prog in "${PROGRAMS[@]}"; do
			f=$(flags "$([ $prog = xz ] && echo xz-utils || echo $prog)" "$b")
			echo "flags $b/$prog: CC=$(cc_of "$b") CFLAGS=${f%%|*} CPPFLAGS=$(echo "$f" | cut -d'|' -f2) LDFLAGS=${f##*|}"
		done
	done
	for b in deb fp sframe; do
		for prog in "${PROGRAMS[@]}"; do
			echo "needs $b/$prog: $(readelf -dW "$guest/$b/$prog" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
		done
	done
} >"$guest/manifest"
log "realprograms: $guest ($(du -sk "$guest" | cut -f1) KiB), manifest $guest/manifest"
