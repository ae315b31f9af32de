#!/usr/bin/env bash
# usage: send.sh [TREE] [BASE]   (what `make send` runs)
#
# Turn TREE's commits since BASE (default: the vmtest-base tag) into a
# series ready to mail, under the sender's identity (git config user.name
# and user.email), in build/send/vN/, then show with git send-email
# --dry-run exactly what would go out. SEND=1 sends it for real and tags
# what was sent series-vN.
#
#   - Every commit keeps its author and the Signed-off-by chain; the
#     sender's Signed-off-by is added last (not twice when the sender is
#     already the last signer). The commits are rewritten as new objects
#     (git commit-tree): no branch, work tree or patches/ file changes.
#     A sender who is not the author gets From: in the mail header and the
#     author in an in-body From: line, as format-patch does.
#   - Version: V=N, else one more than the highest series-vN tag of TREE
#     (v1 when there is none). The range-diff in the cover letter compares
#     with the commits tagged series-v(N-1), from the base recorded in that
#     tag; without such a tag there is no range-diff, and the cover letter
#     says so.
#   - Recipients: scripts/get_maintainer.pl run in TREE (the patched tree,
#     so the series' own MAINTAINERS entry counts) over the patches.
#     Maintainers and supporters go to To:, reviewers and lists to Cc:, as
#     do the authors and signers of the series; the sender and addresses in
#     reserved domains (example.org, *.example, *.invalid, ...), which
#     receive no mail, are left out and named. TO= and CC= (comma
#     separated) add more. The whole series goes to everybody, threaded
#     under the cover letter.
#   - The cover letter: ci/cover-letter.txt, then "Changes in vN" (CHANGES=
#     FILE adds hand-written notes; then what the range-diff says per
#     patch), "Tested" (ci/tested.py: the latest make vmtest runs under
#     RESULTS, default build/out/linux) and format-patch's shortlog,
#     diffstat, range-diff and base-commit.
#
# The text work (recipients, "Changes in vN", the cover letter's blanks) is
# ci/send_prep.py's, tested in tests/test_send.py.
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
# The highest N of the series-vN tags, 0 when there is none.
last=$(git -C "$tree" tag -l 'series-v[0-9]*' |
	sed -n 's/^series-v\([1-9][0-9]*\)$/\1/p' | sort -n | tail -1)
last=${last:-0}
if [ -n "${V:-}" ]; then
	[[ "$V" =~ ^[1-9][0-9]*$ ]] || die "V=$V: give the version as a number, e.g. V=2"
	v=$V
else
	v=$((last + 1))
fi
if [ "$send" = 1 ] && git -C "$tree" rev-parse -q --verify "refs/tags/series-v$v" >/dev/null; then
	die "v$v was sent already (tag series-v$v in $tree): send V=$((last + 1))," \
		"or delete the tag (git -C $tree tag -d series-v$v) to send v$v again"
fi
prev="" prev_base=""
if [ "$v" -gt 1 ] && git -C "$tree" rev-parse -q --verify "refs/tags/series-v$((v - 1))" >/dev/null; then
	prev=series-v$((v - 1))
	# The base that version was sent on, recorded in its tag, else the
	# merge base: a rebase onto a newer 6.12.y then stays out of the
	# range-diff.
	prev_base=$(git -C "$tree" tag -l --format='%(contents)' "$prev" |
		sed -n 's/^base-commit: \([0-9a-f]\{40\}\)$/\1/p' | tail -1)
	[ -n "$prev_base" ] || prev_base=$(git -C "$tree" merge-base "$prev" "$base")
fi

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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head=$(git -C "$tree" rev-parse "$base^{commit}")
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
done

out=$outroot/v$v
rm -rf "$out"
mkdir -p "$out"

# --- recipients ------------------------------------------------------------
prep() { /usr/bin/python3 "$ROOT/ci/send_prep.py" "$@"; }

if prep reserved -- "<$email>"; then
	[ "$send" = 0 ] || die "user.email $email is in a reserved domain: nobody could" \
		"reply, and lists reject it; git config --global user.email 'you@your.domain'"
	warn "user.email $email is in a reserved domain: fine for a dry run," \
		"SEND=1 will refuse it"
fi

git -C "$tree" format-patch -q --no-signature -o "$tmp/plain" "$base..$head"
gm=${GET_MAINTAINER:-perl scripts/get_maintainer.pl}
# With roles (the default --rolestats) to split To: from Cc:; the roles
# are then dropped. No git history (--no-git, --no-git-fallback): only
# MAINTAINERS decides, the same for everybody.
(cd "$tree" && $gm --no-git --no-git-fallback "$tmp"/plain/*.patch) >"$tmp/gm" 2>"$tmp/gm.err" || {
	cat "$tmp/gm.err" >&2
	die "get_maintainer.pl failed in $tree: is it a kernel tree ('make tree')?"
}
cp "$tmp/gm" "$out/get_maintainer.txt"
# The series' own people: authors, signers, Cc: trailers.
git -C "$tree" log --format='%an <%ae>%n%(trailers:key=Signed-off-by,key=Cc,valueonly)' \
	"$base..HEAD" >"$tmp/people"
rcpt=$(prep recipients --gm "$tmp/gm" --people "$tmp/people" --sender "$email" \
	--to="${TO:-}" --cc="${CC:-}" --out "$tmp/recipients.txt") || exit
to=() cc=()
while IFS=$'\t' read -r kind who; do
	case $kind in
	to) to+=("$who") ;;
	cc) cc+=("$who") ;;
	esac
done <<<"$rcpt"

# --- the cover letter's text -------------------------------------------------
letter=$ROOT/ci/cover-letter.txt
subject=$(sed -n 1p "$letter")
{
	sed '1,2d' "$letter"
	echo
	# "Changes in vN" (none for v1): against series-v(N-1) when tagged.
	ch=()
	if [ -n "$prev" ]; then
		git -C "$tree" range-diff --no-color -s "$prev_base..$prev" "$base..$head" >"$tmp/range-diff"
		ch=(--range-diff "$tmp/range-diff")
		[ -z "${CHANGES:-}" ] || ch+=(--notes "$CHANGES")
	fi
	prep changes "${ch[@]}" -- "$v"
	bench=()
	grep -q '^bench:' "$ROOT/Makefile" && bench=(--bench "$results/bench/summary.txt")
	/usr/bin/python3 "$ROOT/ci/tested.py" "$results" \
		--since "$(git -C "$tree" log -1 --format=%ct HEAD)" "${bench[@]}"
} >"$tmp/blurb"

# --- the series ------------------------------------------------------------
fp=(-q -v "$v" --cover-letter --thread=shallow --no-signature
	--base="$base" --from="$sender" -o "$out")
[ -z "$prev" ] || fp+=(--range-diff="$prev_base..$prev")
for a in "${to[@]}"; do fp+=(--to="$a"); done
for a in "${cc[@]}"; do fp+=(--cc="$a"); done
GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email \
	git -C "$tree" format-patch "${fp[@]}" "$base..$head"
cover=$(ls "$out"/v"$v"-0000-cover-letter.patch)
prep fill-cover -- "$cover" "$subject" "$tmp/blurb"
cp "$tmp/recipients.txt" "$out/recipients.txt"

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
log "v$v: ${#commits[@]} patches + cover letter in ${out#"$ROOT"/}, from $sender"
log "the commits as sent: $(git -C "$tree" rev-parse --short "$base^{commit}")..${head:0:12}"
if [ -n "$prev" ]; then
	log "range-diff against $prev (base ${prev_base:0:12}) in the cover letter"
elif [ "$v" -gt 1 ]; then
	warn "no tag series-v$((v - 1)): v$v has no range-diff"
else
	log "v1: no earlier version, no range-diff"
fi
log "recipients (${out#"$ROOT"/}/recipients.txt):"
sed 's/^/    /' "$out/recipients.txt" >&2
rc=0
(cd "$tree" && git send-email "${se[@]}" "$out"/*.patch) </dev/null \
	>"$out/send-email.log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
	tail -20 "$out/send-email.log" >&2
	die "git send-email failed (exit $rc): see ${out#"$ROOT"/}/send-email.log"
fi
# One line per mail: what would go out (the full headers are in the log).
grep -E '^(Subject|Dry-OK|OK|Result):' "$out/send-email.log" |
	sed -n 's/^Subject: /    /p' >&2
if [ "$send" = 1 ]; then
	git -C "$tree" tag -a "series-v$v" "$head" -F - <<-EOF
	$subject (v$v)

	Sent by $sender to ${#to[@]} + ${#cc[@]} recipients.

	base-commit: $(git -C "$tree" rev-parse "$base^{commit}")
	EOF
	log "sent v$v; tagged series-v$v (the next make send is v$((v + 1)), with a range-diff against it)"
else
	log "dry run: $(grep -c '^Dry-OK' "$out/send-email.log" || true) mails checked by" \
		"git send-email --dry-run, none sent (log: ${out#"$ROOT"/}/send-email.log); SEND=1 sends"
fi
