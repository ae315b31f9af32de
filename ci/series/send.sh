#!/usr/bin/env bash
# usage: send.sh [TREE] [BASE]   (what `make send` runs)
#
# Turn TREE's commits since BASE (default: the vmtest-base tag) into the
# two series ready to mail, under the sender's identity (git config
# user.name and user.email), in build/send/vN/fixes/ and
# build/send/vN/feature/, then show with git send-email --dry-run exactly
# what would go out. SEND=1 sends them for real, the fixes first, and tags
# what was sent fixes-vN and series-vN.
#
#   - The two series: TREE's first commits, those ci/series/fixes.txt names, are
#     the fixes of Linux itself, a series of their own based on BASE with
#     the cover letter ci/series/fixes-cover-letter.txt; the rest is the
#     feature, based on the fixes (its cover letter says so, and
#     format-patch's prerequisite-patch-id lines name them), with the
#     cover letter ci/series/cover-letter.txt. count_fixes (lib.sh) refuses a
#     tree where a listed fix is missing or comes after the feature. Each
#     series is its own thread, with its own recipients.
#
#   - Every commit keeps its author and the Signed-off-by chain; the
#     sender's Signed-off-by is added last (not twice when the sender is
#     already the last signer). The commits are rewritten as new objects
#     (git commit-tree): no branch, work tree or patches/ file changes.
#     A sender who is not the author gets From: in the mail header and the
#     author in an in-body From: line, as format-patch does.
#   - Version: V=N, else one more than the highest series-vN or fixes-vN
#     tag of TREE (v1 when there is none); both series carry it. The
#     range-diff in each cover letter compares with what was sent as
#     v(N-1): the fixes with fixes-v(N-1) from the base recorded in its
#     tag, the feature with series-v(N-1) from fixes-v(N-1) (from the
#     recorded base when v(N-1) had no fixes series); without such a tag
#     there is no range-diff, and the cover letter says so.
#   - Recipients: scripts/get_maintainer.pl run in TREE (the patched tree,
#     so the series' own MAINTAINERS entry counts) over the patches.
#     Maintainers and supporters go to To:, reviewers and lists to Cc:, as
#     do the authors and signers of the series; the sender and addresses in
#     reserved domains (example.org, *.example, *.invalid, ...), which
#     receive no mail, are left out and named. TO= and CC= (comma
#     separated) add more. The whole series goes to everybody, threaded
#     under the cover letter.
#   - The cover letters: ci/series/fixes-cover-letter.txt (which tests prove each
#     fix, on 6.12 and 7.2), or ci/series/cover-letter.txt and the fixes series
#     it is based on; then "Changes in vN" (CHANGES=FILE adds hand-written
#     notes, to the feature's letter; then what the range-diff says per
#     patch), for the feature "Tested" (ci/series/tested_section.py: the latest make
#     vmtest runs under RESULTS, default build/out/linux) and
#     format-patch's shortlog, diffstat, range-diff and base-commit (and
#     prerequisite-patch-id).
#
# The text work (recipients, "Changes in vN", the cover letter's blanks) is
# ci/series/send_prep.py's, tested in tests/test_send.py.
#
# Refuses (exit 2, saying what to set) when user.name or user.email is
# missing, V is not a number, SEND=1 would send a version already tagged,
# or SEND=1 without sendemail.smtpServer. GET_MAINTAINER=CMD replaces
# "perl scripts/get_maintainer.pl" (tests).
. "$(dirname "$0")/lib.sh"

tree=$(realpath -m "${1:-$WORKTREE}")
base=${2:-}
[ -n "$base" ] || base=$BASE_TAG
send=${SEND:-0}
results=${RESULTS:-$BUILD/out/linux}
outroot=${SEND_OUT:-$BUILD/send}

{ [ -d "$tree" ] && git -C "$tree" rev-parse -q --git-dir >/dev/null 2>&1; } ||
	die "$tree is not a git tree: run 'make tree' (or give KERNEL=DIR)"
git -C "$tree" rev-parse -q --verify "$base^{commit}" >/dev/null ||
	die "$tree has no base '$base': give BASE=<commit> (the unpatched 6.12.y commit)"
case $send in 0 | 1) ;; *) die "SEND=$send: use SEND=1 to send, nothing (or 0) for a dry run" ;; esac

# --- the sender ----------------------------------------------------------
name=$(git -C "$tree" config user.name || true)
email=$(git -C "$tree" config user.email || true)
missing=()
[ -n "$name" ] || missing+=("git config --global user.name 'Your Name'")
[[ "$email" == ?*@?* ]] ||
	missing+=("git config --global user.email 'you@example.com'")
if [ "${#missing[@]}" -gt 0 ]; then
	die "the series is sent under your git identity, and $(
		[ -n "$name" ] || printf 'user.name'
		[ -n "$name" ] || [[ "$email" == ?*@?* ]] || printf ' and '
		[[ "$email" == ?*@?* ]] || printf 'user.email')" \
		"is not set; set it with: $(printf '%s; ' "${missing[@]}" | sed 's/; $//')"
fi
sender="$name <$email>"

# --- the version -----------------------------------------------------------
# The highest N of the series-vN and fixes-vN tags, 0 when there is none.
last=$(git -C "$tree" tag -l 'series-v[0-9]*' 'fixes-v[0-9]*' |
	sed -n 's/^\(series\|fixes\)-v\([1-9][0-9]*\)$/\2/p' | sort -n | tail -1)
last=${last:-0}
if [ -n "${V:-}" ]; then
	[[ "$V" =~ ^[1-9][0-9]*$ ]] || die "V=$V: give the version as a number, e.g. V=2"
	v=$V
else
	v=$((last + 1))
fi
if [ "$send" = 1 ]; then
	for t in fixes-v$v series-v$v; do
		git -C "$tree" rev-parse -q --verify "refs/tags/$t" >/dev/null || continue
		die "v$v was sent already (tag $t in $tree): send V=$((last + 1))," \
			"or delete the tags (git -C $tree tag -d fixes-v$v series-v$v) to send v$v again"
	done
fi
has_tag() { git -C "$tree" rev-parse -q --verify "refs/tags/$1" >/dev/null; }
# tag_base TAG: the base that version was sent on, recorded in its tag,
# else the merge base: a rebase onto a newer 6.12.y then stays out of the
# range-diff.
tag_base() {
	local b
	b=$(git -C "$tree" tag -l --format='%(contents)' "$1" |
		sed -n 's/^base-commit: \([0-9a-f]\{40\}\)$/\1/p' | tail -1)
	[ -n "$b" ] || b=$(git -C "$tree" merge-base "$1" "$base")
	echo "$b"
}

# --- the commits, under the sender ------------------------------------------
mapfile -t commits < <(git -C "$tree" rev-list --reverse "$base..HEAD")
[ "${#commits[@]}" -gt 0 ] || die "$tree has no commits after $base: nothing to send"
[ -z "$(git -C "$tree" rev-list --merges "$base..HEAD")" ] ||
	die "$tree has merge commits after $base: a series to mail must be linear (rebase it)"
[ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ] ||
	warn "$tree has uncommitted changes: they are not sent (commit them first)"

# signoff MESSAGE-FILE: the message with the sender's Signed-off-by last.
signoff() {
	git -C "$tree" -c trailer.ifexists=addIfDifferentNeighbor \
		interpret-trailers --no-divider --where end \
		--if-exists addIfDifferentNeighbor \
		--trailer "Signed-off-by: $sender" <"$1"
}

nfix=$(count_fixes "$tree" "$base")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head=$(git -C "$tree" rev-parse "$base^{commit}")
fixhead=$head
i=0
for c in "${commits[@]}"; do
	git -C "$tree" log -1 --format=%B "$c" >"$tmp/msg"
	signoff "$tmp/msg" >"$tmp/msg.signed"
	# Author and dates as they are, the sender as committer: the same
	# commits give the same objects on every run.
	mapfile -t meta < <(git -C "$tree" log -1 --date=raw \
		--format='%an%n%ae%n%ad%n%cd' "$c")
	head=$(GIT_AUTHOR_NAME=${meta[0]} GIT_AUTHOR_EMAIL=${meta[1]} \
		GIT_AUTHOR_DATE=${meta[2]} GIT_COMMITTER_DATE=${meta[3]} \
		GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email \
		git -C "$tree" commit-tree "$c^{tree}" -p "$head" -F "$tmp/msg.signed")
	i=$((i + 1))
	[ "$i" -ne "$nfix" ] || fixhead=$head
done

vout=$outroot/v$v
rm -rf "$vout"
mkdir -p "$vout"

# --- recipients ------------------------------------------------------------
prep() { /usr/bin/python3 -m ci.series.send_prep "$@"; }

if prep reserved -- "<$email>"; then
	[ "$send" = 0 ] || die "user.email $email is in a reserved domain: nobody could" \
		"reply, and lists reject it; git config --global user.email 'you@your.domain'"
	warn "user.email $email is in a reserved domain: fine for a dry run," \
		"SEND=1 will refuse it"
fi

# make_series NAME FROM TO TAG PREV_TAG PREV_FROM LETTER: the commits
# FROM..TO (rewritten under the sender) as series NAME in $vout/NAME/,
# with its recipients and cover letter; TAG is what SEND=1 tags it,
# PREV_TAG (if any) v(N-1) of it, sent as PREV_FROM..PREV_TAG.
make_series() {
	local name=$1 from=$2 to=$3 tag=$4 prev=$5 prev_from=$6 letter=$7
	local out=$vout/$name w=$tmp/$name gm rcpt kind who subject a
	local to_=() cc_=() ch=() bench=() fp=()
	mkdir -p "$out" "$w"
	# --- recipients: of this series' patches and people
	format_patch "$tree" -q --no-signature -o "$w/plain" "$from..$to"
	gm=${GET_MAINTAINER:-perl scripts/get_maintainer.pl}
	# With roles (the default --rolestats) to split To: from Cc:; the
	# roles are then dropped. No git history (--no-git,
	# --no-git-fallback): only MAINTAINERS decides, the same for
	# everybody.
	(cd "$tree" && $gm --no-git --no-git-fallback "$w"/plain/*.patch) >"$w/gm" 2>"$w/gm.err" || {
		cat "$w/gm.err" >&2
		die "get_maintainer.pl failed in $tree: is it a kernel tree ('make tree')?"
	}
	cp "$w/gm" "$out/get_maintainer.txt"
	# The series' own people: authors, signers, Cc: trailers.
	git -C "$tree" log --format='%an <%ae>%n%(trailers:key=Signed-off-by,key=Cc,valueonly)' \
		"$from..$to" >"$w/people"
	rcpt=$(prep recipients --gm "$w/gm" --people "$w/people" --sender "$email" \
		--to="${TO:-}" --cc="${CC:-}" --out "$w/recipients.txt") || exit
	while IFS=$'\t' read -r kind who; do
		case $kind in
		to) to_+=("$who") ;;
		cc) cc_+=("$who") ;;
		esac
	done <<<"$rcpt"
	# --- the cover letter's text
	subject=$(sed -n 1p "$letter")
	{
		sed '1,2d' "$letter"
		echo
		if [ "$name" = feature ] && [ "$from" != "$base_commit" ]; then
			git -C "$tree" log --reverse --format=%s "$base_commit..$from" >"$w/fixes"
			prep based-on --subjects "$w/fixes" -- \
				"[PATCH v$v 0/$(wc -l <"$w/fixes")] $(sed -n 1p "$ROOT/ci/series/fixes-cover-letter.txt")"
		fi
		# "Changes in vN" (none for v1): against v(N-1) when tagged.
		if [ -n "$prev" ]; then
			git -C "$tree" range-diff --no-color -s "$prev_from..$prev" "$from..$to" >"$w/range-diff"
			ch=(--range-diff "$w/range-diff")
			[ "$name" != feature ] || [ -z "${CHANGES:-}" ] || ch+=(--notes "$CHANGES")
		fi
		prep changes --tag "${tag%-v*}" "${ch[@]}" -- "$v"
		if [ "$name" = feature ]; then
			grep -q '^bench:' "$ROOT/Makefile" && bench=(--bench "$results/bench/summary.txt")
			/usr/bin/python3 -m ci.series.tested_section "$results" \
				--since "$(git -C "$tree" log -1 --format=%ct HEAD)" "${bench[@]}"
		fi
	} >"$w/blurb"
	# --- the series
	fp=(-q -v "$v" --cover-letter --thread=shallow --no-signature
		--base="$base_commit" --from="$sender" -o "$out")
	[ -z "$prev" ] || fp+=(--range-diff="$prev_from..$prev")
	for a in "${to_[@]}"; do fp+=(--to="$a"); done
	for a in "${cc_[@]}"; do fp+=(--cc="$a"); done
	GIT_COMMITTER_NAME=$name_ GIT_COMMITTER_EMAIL=$email \
		format_patch "$tree" "${fp[@]}" "$from..$to"
	prep fill-cover -- "$(ls "$out"/v"$v"-0000-cover-letter.patch)" "$subject" "$w/blurb"
	cp "$w/recipients.txt" "$out/recipients.txt"
	series_out+=("$name")
	series_tag[$name]=$tag
	series_head[$name]=$to
	series_count[$name]=$(git -C "$tree" rev-list --count "$from..$to")
	series_prev[$name]=$prev
	series_subject[$name]=$subject
	series_rcpt[$name]="${#to_[@]} + ${#cc_[@]}"
}

base_commit=$(git -C "$tree" rev-parse "$base^{commit}")
name_=$name
series_out=()
declare -A series_tag=() series_head=() series_count=() series_prev=() series_subject=() series_rcpt=()
pv=$((v - 1))
fprev='' fprev_from='' sprev='' sprev_from=''
if [ "$v" -gt 1 ] && has_tag "fixes-v$pv"; then
	fprev=fixes-v$pv fprev_from=$(tag_base "fixes-v$pv")
fi
if [ "$v" -gt 1 ] && has_tag "series-v$pv"; then
	sprev=series-v$pv
	# The feature of v(N-1) starts after its fixes, if it had any.
	if [ -n "$fprev" ]; then sprev_from=$fprev; else sprev_from=$(tag_base "series-v$pv"); fi
fi
[ "$nfix" -eq 0 ] ||
	make_series fixes "$base_commit" "$fixhead" "fixes-v$v" "$fprev" "$fprev_from" \
		"$ROOT/ci/series/fixes-cover-letter.txt"
[ "$fixhead" = "$head" ] ||
	make_series feature "$fixhead" "$head" "series-v$v" "$sprev" "$sprev_from" \
		"$ROOT/ci/series/cover-letter.txt"

# --- send-email ------------------------------------------------------------
# The recipients are in the files' headers; nothing is added behind our
# back (--suppress-cc=all: the authors and signers are in Cc: already),
# and format-patch did the threading (--no-thread).
se=(--no-format-patch --confirm=never --suppress-cc=all --no-thread
	--from="$sender")
if [ "$send" = 1 ]; then
	[ -n "$(git -C "$tree" config sendemail.smtpServer || true)" ] ||
		die "SEND=1 needs an SMTP server: git config --global sendemail.smtpServer" \
			"smtp.example.com (and sendemail.smtpUser, smtpEncryption, smtpServerPort;" \
			"see git help send-email)"
else
	se+=(--dry-run)
fi
log "v$v: ${#commits[@]} patches in ${vout#"$ROOT"/}, from $sender:$(for n in "${series_out[@]}"; do
	printf ' %s %s + cover letter;' "${series_count[$n]}" "$n"; done | sed 's/;$//')"
log "the commits as sent: $(git -C "$tree" rev-parse --short "$base^{commit}")..${head:0:12}"
for n in "${series_out[@]}"; do
	if [ -n "${series_prev[$n]}" ]; then
		log "$n: range-diff against ${series_prev[$n]} in its cover letter"
	elif [ "$v" -gt 1 ]; then
		warn "$n: no tag ${series_tag[$n]%-v*}-v$((v - 1)): its v$v has no range-diff"
	else
		log "$n: v1, no earlier version, no range-diff"
	fi
done
# Each series is a thread of its own, the fixes first: the feature's
# cover letter names them.
mails=0
for n in "${series_out[@]}"; do
	out=$vout/$n
	log "$n: recipients (${out#"$ROOT"/}/recipients.txt):"
	sed 's/^/    /' "$out/recipients.txt" >&2
	rc=0
	(cd "$tree" && git send-email "${se[@]}" "$out"/*.patch) </dev/null \
		>"$out/send-email.log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		tail -20 "$out/send-email.log" >&2
		die "git send-email failed (exit $rc) on the $n series: see ${out#"$ROOT"/}/send-email.log"
	fi
	# One line per mail: what would go out (the full headers are in the log).
	grep -E '^(Subject|Dry-OK|OK|Result):' "$out/send-email.log" |
		sed -n 's/^Subject: /    /p' >&2
	mails=$((mails + $(grep -c '^Dry-OK' "$out/send-email.log" || true)))
	if [ "$send" = 1 ]; then
		git -C "$tree" tag -a "${series_tag[$n]}" "${series_head[$n]}" -F - <<-EOF
		${series_subject[$n]} (v$v)

		Sent by $sender to ${series_rcpt[$n]} recipients.

		base-commit: $(git -C "$tree" rev-parse "$base^{commit}")
		EOF
	fi
done
if [ "$send" = 1 ]; then
	log "sent v$v; tagged $(for n in "${series_out[@]}"; do printf '%s ' "${series_tag[$n]}"; done)(the next make send is v$((v + 1)), with range-diffs against them)"
else
	log "dry run: $mails mails checked by git send-email --dry-run, none sent" \
		"(logs: ${vout#"$ROOT"/}/*/send-email.log); SEND=1 sends"
fi
