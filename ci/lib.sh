# shellcheck shell=bash
# The core every harness script sources (directly or through its job's
# lib.sh): where things are, how to say what went wrong, the build lock.
# Source it; do not run it. The jobs' own helpers are in ci/series/lib.sh
# (the patch series and kernel trees), ci/build/lib.sh (compilers, perf's
# switches, warning diffs) and ci/guest/lib.sh (the guest architecture,
# booting a guest).
#
# Exit codes (doc/harness.md, "Exit codes"): 0 pass, 1 test or build failure,
# 2 usage or setup error (always with a message that says what to do),
# 4 all skipped.

set -euo pipefail

# Sourced once: the job libraries source it too.
[ -z "${CI_LIB_LOADED:-}" ] || return 0
CI_LIB_LOADED=1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# One lock for builds and guest runs; clones sharing a machine can share it.
KBUILD_LOCK=${VMTEST_LOCK:-$BUILD/.kbuild.lock}
# The harness's Python is one package, ci (python3 -m ci.judge.stress ...),
# found from the checkout's root whatever the working directory.
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}

log() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
# die MESSAGE...: a usage/setup error (exit 2). Say what to do.
die() { printf 'error: %s\n' "$*" >&2; exit 2; }
# fail MESSAGE...: what was checked or built is wrong (exit 1): a tree
# that does not build is the series' failure, not the user's setup.
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# cpu_counted FILE CMD...: run CMD in a subshell whose only children are
# CMD's and write the CPU seconds it took (user and system, its children
# included) to FILE, "?" where /proc cannot say (a measure never fails
# what it measures). CMD's exit. The subshell keeps out whatever else the
# caller reaps meanwhile (check.sh's background builds).
cpu_counted() {
	local out=$1
	shift
	rm -f "$out"
	(
		rc=0
		children_ticks
		c0=$CHILDREN_TICKS
		"$@" || rc=$?
		children_ticks
		cpu_seconds "$c0" "$CHILDREN_TICKS" >"$out" || true
		exit "$rc"
	)
}

# children_ticks: CHILDREN_TICKS = the CPU time (user and system, in clock
# ticks) of this shell's children that have ended and been waited for,
# their own children included (/proc's cutime and cstime); empty where
# /proc cannot say (a measure never fails what it measures). Not in $(...):
# a subshell counts its own children only.
# shellcheck disable=SC2034 # CHILDREN_TICKS is the caller's
children_ticks() {
	local line f
	CHILDREN_TICKS=
	# A builtin's redirection: /proc/self is this shell (or subshell)
	read -r line 2>/dev/null </proc/self/stat || return 0
	# The fields after the command's name (which may hold spaces): the
	# state first, cutime 14th, cstime 15th.
	read -ra f <<<"${line##*) }"
	[[ ${f[13]:-} =~ ^[0-9]+$ && ${f[14]:-} =~ ^[0-9]+$ ]] || return 0
	CHILDREN_TICKS=$((f[13] + f[14]))
}

# cpu_seconds T0 T1: the CPU seconds between two children_ticks, rounded;
# "?" when either is unknown.
cpu_seconds() {
	local hz
	hz=$(getconf CLK_TCK 2>/dev/null) || hz=
	if [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ && $hz =~ ^[1-9][0-9]*$ ]]; then
		echo $((($2 - $1 + hz / 2) / hz))
	else
		echo "?"
	fi
}

# say_if_build_lock_held: when another process holds the build lock, say
# that this one waits and for whom (/proc/locks names the holder's pid): a
# make matrix row holds it for up to an hour, and flock(1) waits silently.
# Only a conflict (flock -n's exit 75 here) is said; nothing in it may end
# the caller (set -e): a holder gone meanwhile leaves the message vaguer.
say_if_build_lock_held() {
	mkdir -p "$BUILD"
	local rc=0 id pid='' who=''
	flock -n -E 75 "$KBUILD_LOCK" true 2>/dev/null || rc=$?
	[ "$rc" -eq 75 ] || return 0
	# /proc/locks names a file as MAJOR:MINOR:INODE, the numbers in hex
	id=$(stat -L -c '%Hd %Ld %i' "$KBUILD_LOCK" 2>/dev/null |
		awk '{ printf "%02x:%02x:%s", $1, $2, $3 }') || id=''
	# the inode alone where the device differs (overlayfs shows the lower
	# one's): the first such lock
	[ -z "$id" ] || pid=$(awk -v id="$id" '$2 != "FLOCK" { next }
		$6 == id { print $5; found = 1; exit }
		{ n = split($6, f, ":"); split(id, g, ":")
		  if (f[n] == g[3] && !any) any = $5 }
		END { if (!found && any) print any }' /proc/locks 2>/dev/null) ||
		pid=''
	[ -z "$pid" ] || who=$(ps -o args= -p "$pid" 2>/dev/null |
		cut -c1-120) || who=''
	log "waiting for the build lock $KBUILD_LOCK: held by ${pid:-another process}${who:+ ($who)}; one kernel build or guest at a time"
}

# Run a kernel build under one lock: two cores, one build at a time. A
# caller that holds the lock already (VMTEST_BUILD_LOCKED, lock_script)
# runs it as it is: a second flock of the same file would wait for ever.
with_build_lock() {
	mkdir -p "$BUILD"
	if [ -n "${VMTEST_BUILD_LOCKED:-}" ]; then
		"$@"
	else
		say_if_build_lock_held
		flock "$KBUILD_LOCK" "$@"
	fi
}

# lock_script "$@": run the calling build script again, whole, under the
# build lock (VMTEST_BUILD_LOCKED marks the locked run, which goes on).
lock_script() {
	[ -z "${VMTEST_BUILD_LOCKED:-}" ] || return 0
	say_if_build_lock_held
	VMTEST_BUILD_LOCKED=1 exec flock "$KBUILD_LOCK" "$0" "$@"
}
