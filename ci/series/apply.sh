#!/usr/bin/env bash
# usage: apply.sh DIR   (FORCE=1 skips the 6.12.y check; INIT=1 first
# commits the files of a DIR with no commit yet as its base; SERIES=fixes
# or SERIES=feature applies that series alone, default both)
#
# Apply patches/ to the kernel git tree DIR with `git am`: the fixes
# series, then the feature series (series_files in lib.sh). Refuses
# (exit 2, tree untouched) when DIR is not a git tree (without INIT=1), has
# uncommitted changes, is not 6.12.y (the fixes alone apply to any
# version: they are proven on 6.12 and 7.2), or already carries a patch
# it would apply. A patch that does not apply is named with its
# conflicting files, and the tree is put back as it was: after INIT=1,
# without the git tree it made.
. "$(dirname "$0")/lib.sh"

dir=${1:-}
init=${INIT:-0}
[ -n "$dir" ] || die "usage: make apply KERNEL=/path/to/linux-6.12.y"
[ -d "$dir" ] || die "KERNEL=$dir: no such directory"
case $init in 0 | 1) ;; *) die "INIT=$init: use INIT=1 to commit the tree's files as its base first" ;; esac
want=${SERIES:-all}
if [ "$want" = all ]; then
	which=("${SERIES_NAMES[@]}")
else
	[[ " ${SERIES_NAMES[*]} " == *" $want "* ]] ||
		die "SERIES=$want: use SERIES=$(printf '%s or SERIES=' "${SERIES_NAMES[@]}")all (the default)"
	which=("$want")
fi
# Not 'git init && git add -A': Debian's linux-source .gitignore makes
# that add nothing (commit_base in lib.sh).
recipe="'make apply KERNEL=$dir INIT=1' commits its files as the base first (tag $BASE_TAG), as make tree does"

tmp=$(mktemp -d)
inited=
# Any failure once INIT=1 began takes back what it did: the git tree it
# made (or the one without commits, as it was) and its .gitignore edit.
cleanup() {
	local rc=$?
	if [ "$rc" -ne 0 ] && [ -n "$inited" ]; then
		rm -rf "$dir/.git"
		[ ! -d "$tmp/git" ] || cp -a "$tmp/git" "$dir/.git"
		if [ -f "$tmp/gitignore" ]; then
			rm -f "$dir/.gitignore"
			cp -p "$tmp/gitignore" "$dir/.gitignore"
		fi
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! git -C "$dir" rev-parse --git-dir >/dev/null 2>&1; then
	[ "$init" = 1 ] || die "KERNEL=$dir is not a git tree: $recipe"
elif [ "$(git -C "$dir" rev-parse --show-toplevel)" != "$(cd "$dir" && pwd -P)" ]; then
	die "KERNEL=$dir is inside a git tree but not its top level: point KERNEL at the tree's top"
elif ! git -C "$dir" rev-parse -q --verify HEAD >/dev/null; then
	[ "$init" = 1 ] || die "KERNEL=$dir has no commits: $recipe"
	[ -d "$dir/.git" ] ||
		die "KERNEL=$dir has no commits and its .git is not a directory: commit the base tree there first"
else
	[ "$init" = 0 ] || log "KERNEL=$dir has commits already: INIT=1 does nothing"
	init=0
fi
[ -f "$dir/Makefile" ] && [ -d "$dir/kernel" ] ||
	die "KERNEL=$dir does not look like a Linux source tree (no Makefile or kernel/)"
version=$(sed -n -e 's/^VERSION = //p' -e 's/^PATCHLEVEL = //p' "$dir/Makefile" | paste -sd.)
if [ "$version" != "6.12" ] && [[ " ${which[*]} " == *" feature "* ]]; then
	[ "${FORCE:-0}" = 1 ] ||
		die "KERNEL=$dir is Linux $version, not 6.12.y: the series targets 6.12 LTS (FORCE=1 tries anyway)"
	warn "KERNEL=$dir is Linux $version, not 6.12.y: applying anyway (FORCE=1)"
fi

if [ "$init" = 1 ]; then
	[ ! -d "$dir/.git" ] || cp -a "$dir/.git" "$tmp/git"
	[ ! -f "$dir/.gitignore" ] || cp -p "$dir/.gitignore" "$tmp/gitignore"
	inited=1
	log "KERNEL=$dir: committing its files as the base (tag $BASE_TAG)"
	commit_base "$dir"
fi

if [ -d "$(git -C "$dir" rev-parse --git-path rebase-apply)" ]; then
	die "KERNEL=$dir has a 'git am' or rebase in progress: finish it or run 'git am --abort' there"
fi
dirty=$(git -C "$dir" status --porcelain --untracked-files=no)
if [ -n "$dirty" ]; then
	printf '%s\n' "$dirty" | head -10 >&2
	die "KERNEL=$dir has uncommitted changes (above): commit or stash them, then retry"
fi

mapfile -t series < <(series_files "${which[@]}")
if [ ${#series[@]} -eq 0 ]; then
	log "0 patches applied (patches/ holds no ${which[*]} series)"
	exit 0
fi

# Already applied? Any patch subject found among the tree's recent commits.
recent=$(git -C "$dir" log --format='%h %s' -n 5000)
for p in "${series[@]}"; do
	subj=$(patch_subject "$p")
	hit=$(printf '%s\n' "$recent" | awk -v s="$subj" 'substr($0, index($0, " ") + 1) == s { print $1; exit }')
	if [ -n "$hit" ]; then
		hint="Use a tree without it, or reset it to the base first"
		# A tree with the fixes already (a later 6.12.y): the feature alone.
		[ "$(series_of "$p")" != fixes ] || [ "${#which[@]}" -eq 1 ] ||
			hint="If the tree has the fixes already, SERIES=feature applies the feature alone; else reset it to the base first"
		die "KERNEL=$dir already carries the $(series_of "$p") series: commit $hit is '$subj' ($(series_of "$p")/$(basename "$p")). $hint"
	fi
done

head=$(git -C "$dir" rev-parse HEAD)
out=$tmp/am.out
if git -C "$dir" -c user.name="${GIT_AUTHOR_NAME:-vmtest}" \
	-c user.email="${GIT_AUTHOR_EMAIL:-vmtest@localhost}" \
	am --3way --keep-cr "${series[@]}" >"$out" 2>&1; then
	counts=()
	for s in "${which[@]}"; do
		c=$(series_files "$s" | wc -l)
		[ "$c" -eq 0 ] || counts+=("$c $s")
	done
	log "${#series[@]} patches applied to $dir ($(IFS=,; echo "${counts[*]}" | sed 's/,/, /g');" \
		"$(git -C "$dir" rev-parse --short "$head")..$(git -C "$dir" rev-parse --short HEAD))"
	exit 0
fi

# Failure: name the patch and its files, then restore the tree exactly.
failed=$(sed -n 's/^Patch failed at [0-9]* \(.*\)$/\1/p' "$out" | head -1)
files=$( {
	git -C "$dir" diff --name-only --diff-filter=U 2>/dev/null
	sed -n -e 's/^error: patch failed: \(.*\):[0-9]*$/\1/p' \
		-e 's/^error: \(.*\): patch does not apply$/\1/p' \
		-e 's/^CONFLICT ([^)]*): .* in \(.*\)$/\1/p' "$out"
} | sort -u)
git -C "$dir" am --abort >/dev/null 2>&1 || true
git -C "$dir" reset -q --hard "$head"
sed 's/^/    /' "$out" >&2
echo >&2
# git am names the patch by subject: add its series and file.
for p in "${series[@]}"; do
	[ "$(patch_subject "$p")" != "$failed" ] || failed="$failed ($(series_of "$p")/$(basename "$p"))"
done
printf 'error: patch does not apply to %s: %s\n' "$dir" "${failed:-unknown patch}" >&2
printf '  files in conflict:\n' >&2
printf '    %s\n' ${files:-"(git am named none)"} >&2
back="at $(git -C "$dir" rev-parse --short HEAD), unchanged"
[ -z "$inited" ] || back="as it was before INIT=1"
printf '  the tree is back %s. Rebase the series onto this tree or use a 6.12.y base.\n' "$back" >&2
exit 2
