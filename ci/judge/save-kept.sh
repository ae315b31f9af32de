#!/usr/bin/env bash
# usage: save-kept.sh RESULTS_LOG DEST NAME...   (make trace-recording)
#
# Keep files a guest test printed for the host: with VMTEST_KEEP set, a
# selftest prints each file base64 between "# vmtest-keep: NAME SIZE"
# and "# vmtest-keep-end: NAME" (indented, as the results channel
# carries a program's output). DEST gets every NAME, checked against the
# size the guest gave, and source.txt (the run, kernel and harness), or
# stays as it was if one is missing.
. "$(dirname "$0")/../lib.sh"

[ $# -ge 3 ] || die "usage: save-kept.sh RESULTS_LOG DEST NAME..."
log_file=$1 dst=$2
shift 2
[ -s "$log_file" ] || die "$log_file: no results (make vmtest did not run)"
mkdir -p "$(dirname "$dst")"
tmp=$(mktemp -d "$(dirname "$dst")/.kept.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
# The channel's lines end in CR LF.
tr -d '\r' <"$log_file" >"$tmp/.log"
for name in "$@"; do
	size=$(sed -n "s/^ *# vmtest-keep: $name \([0-9]*\)$/\1/p" "$tmp/.log" | tail -1)
	[ -n "$size" ] || die "$log_file: the guest kept no $name (VMTEST_KEEP unset, or its test failed first)"
	sed -n "/^ *# vmtest-keep: $name [0-9]*$/,/^ *# vmtest-keep-end: $name$/p" "$tmp/.log" |
		sed '1d;$d;s/^ *//' | base64 -d >"$tmp/$name" ||
		die "$log_file: $name is not base64"
	[ "$(stat -c %s "$tmp/$name")" = "$size" ] ||
		die "$log_file: $name has $(stat -c %s "$tmp/$name") bytes, the guest said $size"
done
chmod 644 "$tmp"/*
{
	echo "saved $(date -u '+%Y-%m-%d %H:%M UTC') from $log_file"
	sed -n 's/^# vmtest: init started, \(kernel [^,]*\).*/\1/p' "$tmp/.log" | head -1
	echo "trace-cmd: $(trace-cmd --version 2>/dev/null | sed -n 's/^trace-cmd version \([^ ]*\).*/\1/p' | head -1) (Debian $(dpkg-query -W -f '${Version}' trace-cmd 2>/dev/null), packed into the guest)"
	echo "harness: $(git -C "$ROOT" rev-parse --short=12 HEAD)"
} >"$tmp/source.txt"
rm "$tmp/.log"
rm -rf "$dst"
mv "$tmp" "$dst"
trap - EXIT
log "kept: $dst ($(ls "$dst" | tr '\n' ' '))"
