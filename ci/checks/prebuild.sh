#!/usr/bin/env bash
# usage: prebuild.sh PARENT DIR ITEM...   (ci/checks/check.sh starts it)
#
# make check's builds ahead of its steps: while one step runs (the harness
# tests, a guest, which keep about one of the two cores busy), the kernel
# the next guest boots is built here, so a cold check does not build and
# boot in turn. ITEM is NAME|AFTER|MAKE ARGS: after the step AFTER of
# check.sh has passed (DIR/step-AFTER.done; empty: at once) run
# `make -s MAKE ARGS`, its output in DIR/NAME.log, then write
# DIR/NAME.done ("EXIT SECONDS CPU-SECONDS", the last "?" where /proc
# cannot say). Items run one after another, in order; DIR/ended says the
# script has ended (done, failed or stopped). It stops (its whole process
# group) as soon as the process PARENT, the check, is gone: a check killed
# outright leaves no build behind.
#
# A cache warmer only: the step that needs an item waits for NAME.done and
# then runs its own make as always, which finds the work done, or (the
# item failed) does it again and shows the error where the step fails.
# So the builds here must write nothing a step writes meanwhile: check.sh
# names only outputs no step touches before it waits for them (each
# kernel's kobj directory; arm64's selftests, perf and initramfs once the
# x86 vmtest step has built the packer both initramfs use); what both
# sides fetch and unpack is locked where it is written (fetch-deb.sh,
# perf-upstream.sh).
#
# Niced (19, its autogroup too) and idle I/O class: a guest that wants
# both cores gets them, a build takes what it leaves. It takes its own
# build lock (DIR/lock), not build/.kbuild.lock, which the steps' guests
# hold while they run: overlapping them is the point.
. "$(dirname "$0")/../lib.sh"

[ $# -ge 2 ] || die "usage: prebuild.sh PARENT DIR ITEM..."
parent=$1 dir=$2
shift 2
mkdir -p "$dir"
trap 'touch "$dir/ended"' EXIT
read -r -a stat </proc/$$/stat
# The watch on the check, every 2 s; then this script goes, with its
# whole process group when it leads one (setsid: the check's case).
self=$$
[ "${stat[4]}" = $$ ] && self=-$$
(
	while kill -0 "$parent" 2>/dev/null; do sleep 2; done
	touch "$dir/ended"
	kill -- "$self" 2>/dev/null
) &
watch=$!
export VMTEST_LOCK=$dir/lock
# check.sh's setsid made this a session of its own, which the scheduler's
# autogroups (sched_autogroup_enabled) weigh as much as the check's,
# whatever the nice value of its processes: the group itself is niced
# (only when it is this session's own, never a caller's).
if [ "${stat[5]}" = $$ ] && [ -w /proc/self/autogroup ]; then
	echo 19 >/proc/self/autogroup 2>/dev/null || true
fi
unset VMTEST_BUILD_LOCKED
cd "$ROOT"
for item in "$@"; do
	IFS='|' read -r name after args <<<"$item"
	if [ -n "$after" ]; then
		until [ -e "$dir/step-$after.done" ]; do sleep 2; done
	fi
	t0=$SECONDS rc=0
	# shellcheck disable=SC2086 # ARGS are make's words
	cpu_counted "$dir/$name.cpu" nice -n 19 ionice -t -c 3 make -s $args \
		>"$dir/$name.log" 2>&1 || rc=$?
	echo "$rc $((SECONDS - t0)) $(cat "$dir/$name.cpu" 2>/dev/null || echo "?")" \
		>"$dir/$name.done.tmp"
	mv "$dir/$name.done.tmp" "$dir/$name.done"
done
kill "$watch" 2>/dev/null || true
