# shellcheck shell=bash
# Shared helpers for the harness's shell scripts. Source it; do not run it.
#
# Exit codes follow SPEC section 5: 0 pass, 1 test failure, 2 usage or
# setup error (always with a message that says what to do), 4 all skipped.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# VMTEST_PATCHES points the scripts at another series (the harness tests).
PATCHES=${VMTEST_PATCHES:-$ROOT/patches}
# The default kernel work tree: Debian's linux-source-6.12 as a git repo.
WORKTREE=$BUILD/linux
# Tag in a tree made by base-tree.sh that marks the unpatched base.
BASE_TAG=vmtest-base

log() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
# die MESSAGE...: a usage/setup error (exit 2). Say what to do.
die() { printf 'error: %s\n' "$*" >&2; exit 2; }

# The series, in order, without the cover letter.
series_files() {
	find "$PATCHES" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
		! -name '0000-cover-letter.patch' | LC_ALL=C sort
}

# patch_subject FILE: the subject of a format-patch file, without [PATCH n/m].
patch_subject() {
	awk '/^Subject: /{s = substr($0, 10)
		while ((getline l) > 0 && l ~ /^[ \t]/) s = s l
		sub(/^\[[^]]*\] */, "", s); print s; exit}' "$1"
}

# Run a kernel build under one lock: two cores, one build at a time.
with_build_lock() {
	mkdir -p "$BUILD"
	flock "$BUILD/.kbuild.lock" "$@"
}
