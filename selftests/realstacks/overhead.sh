#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# make overhead's guest runner (run.sh overhead [REPS]; packed beside
# run.sh as /realstacks/overhead.sh): what sampling costs real programs.
# Each program's fixed workload (run.sh's) runs in its frame-pointer
# build, repeated to a few seconds, unprofiled and under perf record on
# cpu-clock at 1 kHz and 10 kHz, user callchains walked in place
# (--call-graph fp) or deferred (--call-graph fp,defer); repetitions
# outermost, so that drift hits every mode alike. One line per run:
#
#   # realstacks-overhead: program=P rep=R mode=M hz=F loops=L cs=T
#     samples=S bytes=B record=RC
#
# T the run's wall time in centiseconds (/proc/uptime: busybox's date
# has no nanoseconds; a run lasts seconds), S perf report --stats'
# PERF_RECORD_SAMPLE count, B the perf.data file's size (every record
# and the header's features: the same in both modes but for the
# callchains and the deferred records). The host (ci/judge/overhead.py)
# divides; nothing here is judged.
#
# Then what one deferred walk costs per frame through the program's own
# text, in its frame-pointer build and in its SFrame build (-fomit-frame-
# pointer, .sframe by sid's binutils: sqlite3's is a large real library's
# text), the same workload sampled at 1 kHz, deferred. A kprobe on
# unwind_user_walk() and a return probe on it are recorded by the same
# perf record, without callchains, every hit a sample (period=1: -c is
# the clock's); per thread each return's
# time minus its entry's is one walk's, the probes' own cost included (the
# same per walk in both builds). One line per build and repetition:
#
#   # realstacks-walks: program=P build=B rep=R walks=W ns=T frames=F
#     records=D record=RC
#
# T the walks' summed time, F the frames of the deferred callchain records
# (perf report -D: the user context marker left out), D those records.
#
# "overhead.sh profile" (make overhead PROFILE=1) runs instead, once per
# program and build, the same sampled workload as the walk lines' under
# a second perf record of the whole guest: cpu-clock in kernel mode
# every PERIOD (20011) ns (on the instruction counter, instructions: a prime, so
# that its samples fall at every phase of the sampled program's 1 ms
# period, as a multiple of it would not on this exact clock; and about
# 200 per 4 ms tick, half the 400 at which perf throttles an event until
# the next tick, which would drop samples at the same phases again and
# again), kernel callchains only, and no probe. Of its
# samples, those whose chain holds unwind_user_walk() are the walk's:
# counted by the function they hit (self) and by each function of the
# chain below the walk (incl); F and D are the frames and records of
# the deferred callchain records the walks made, as above:
#
#   # realstacks-profile: program=P build=B period=PERIOD total=T walk=W
#     frames=F records=D throttled=N lost=L
#
# N the profile's throttle records, L the samples lost by either perf
# record (the host fails a profile with any of either). A sample stands
# for less than PERIOD instructions of the rest: its own handling (the
# interrupt, the kernel callchain, the record) is part of the period and
# never sampled, so samples compare builds and functions, not counts.
#   # realstacks-profile: program=P build=B self=N sym=S
#   # realstacks-profile: program=P build=B incl=N sym=S
#
# On this emulator a sample lands near the instruction the period ended
# at, not always on it: a small function called often takes samples of
# the code before its call (make overhead PROFILE=1, 2026-11-30, xz:
# 152 samples in unwind_user_frame_slot() where its calls, counted, can
# account for about 80; doc/bench.md). So a third pass of the same workload, without the profile,
# counts the calls of the walk's functions exactly (a kprobe each, read
# from kprobe_profile; COUNTED, each the kernel's symbol of that name or
# its one .isra/.constprop copy), with the frames and records of that
# pass, the hits its kprobes missed and the samples or records its perf
# lost:
#
#   # realstacks-profile: program=P build=B calls=N sym=S
#   # realstacks-profile: program=P build=B count_frames=F count_records=D
#     missed=M lost=L
#
#   overhead.sh loop N PROGRAM COMMAND...   the workload N times
RS=${RS:-$(cd "$(dirname "$0")" && pwd)}
PERF=${PERF:-/bin/perf}
W=${W:-/tmp/overhead}
TRACING=${TRACING:-/sys/kernel/tracing}
PROGRAMS=${OVERHEAD_PROGRAMS:-"xz gzip sqlite3"}
# A run's length, unprofiled (centiseconds)
TARGET_CS=${OVERHEAD_TARGET_CS:-300}
bb() { # a busybox applet whatever the PATH holds
	if command -v busybox >/dev/null 2>&1; then busybox "$@"; else "$@"; fi
}

now_cs() {
	read -r up _ </proc/uptime
	echo "${up%.*}${up#*.}"
}

# The workload N times, its wall time (centiseconds) into the file
# OVERHEAD_TIME: the program's time, not perf's start and finish
if [ "${1:-}" = loop ]; then
	n=$2 prog=$3
	shift 3
	t0=$(now_cs)
	while [ "$n" -gt 0 ]; do
		/bin/sh "$RS/run.sh" workload "$prog" "$@" || exit 1
		n=$((n - 1))
	done
	echo $(($(now_cs) - t0)) >"$OVERHEAD_TIME"
	exit 0
fi

plan=overhead
if [ "${1:-}" = profile ]; then
	plan=profile
	shift
fi
reps=${1:-3}
case $reps in '' | *[!0-9]*) echo "# realstacks-error: overhead REPS '$reps' is not a number"; exit 2 ;; esac

# program_cmd PROG BUILD: the command that runs PROG's BUILD (fp, sframe)
# on the packed libraries
program_cmd() {
	echo "$RS/lib/ld-linux-x86-64.so.2 --library-path $RS/lib $RS/$2/$1"
}

# loop_run DIR PROG LOOPS BUILD [PERF RECORD OPTIONS...]: the workload
# LOOPS times in DIR/work, under perf record (DIR/perf.data) when options
# are given; its time to DIR/time, messages to DIR/err. The command's exit.
loop_run() {
	dir=$1 prog=$2 loops=$3 build=$4
	shift 4
	rm -rf "$dir"
	mkdir -p "$dir/work"
	export OVERHEAD_TIME=$dir/time
	[ $# -eq 0 ] || set -- "$PERF" record -q -B -m 2M -o "$dir/perf.data" "$@" --
	# shellcheck disable=SC2046 # the command's words
	(cd "$dir/work" && "$@" /bin/sh "$RS/overhead.sh" loop "$loops" "$prog" \
		$(program_cmd "$prog" "$build")) >/dev/null 2>"$dir/err"
}

# time_run PROG LOOPS MODE HZ: the workload under MODE, one line
time_run() {
	prog=$1 loops=$2 mode=$3 hz=$4
	rc=0 samples=0 bytes=0
	case $mode in
	none) set -- ;;
	inplace) set -- -e cpu-clock -c $((1000000000 / hz)) --call-graph fp ;;
	deferred) set -- -e cpu-clock -c $((1000000000 / hz)) --call-graph fp,defer ;;
	esac
	loop_run "$W/$prog-$mode-$hz" "$prog" "$loops" fp "$@" || rc=$?
	cs=$(cat "$dir/time" 2>/dev/null) || { cs=-1; [ "$rc" != 0 ] || rc=1; }
	if [ "$mode" != none ]; then
		samples=$("$PERF" report --stats -i "$dir/perf.data" 2>/dev/null |
			bb awk '$1 == "SAMPLE" && $2 == "events:" { print $3; exit }')
		bytes=$(bb wc -c <"$dir/perf.data")
	fi
	echo "# realstacks-overhead: program=$prog rep=$rep mode=$mode hz=$hz loops=$loops cs=$cs samples=${samples:-0} bytes=$bytes record=$rc"
	[ "$rc" = 0 ] || bb sed 's/^/# overhead-err: /' "$dir/err" | bb head -5
	rm -rf "$dir"
	return "$rc"
}

# The walk probes: kprobe events of their own group, read by perf through
# the tracepoint PMU (its build has no libtraceevent to name them).
walk_probes() {
	for e in walk walk_ret; do
		[ -d "$TRACING/events/overhead/$e" ] && continue
		case $e in
		walk) def="p:overhead/walk unwind_user_walk" ;;
		walk_ret) def="r:overhead/walk_ret unwind_user_walk" ;;
		esac
		echo "$def" >>"$TRACING/kprobe_events" 2>/dev/null || return 1
	done
	walk_id=$(cat "$TRACING/events/overhead/walk/id") &&
		ret_id=$(cat "$TRACING/events/overhead/walk_ret/id")
}

# stat_events FILE TYPE: how many TYPE records (LOST, THROTTLE, ...)
# FILE holds, 0 for none
stat_events() {
	_n=$("$PERF" report --stats -i "$1" 2>/dev/null |
		bb awk -v t="$2" '$1 == t && $2 == "events:" { print $3; exit }')
	echo "${_n:-0}"
}

# deferred_frames FILE: "records frames" of FILE's deferred callchain
# records, their chains less the context marker
deferred_frames() {
	"$PERF" report -D -i "$1" 2>/dev/null |
		bb awk '/PERF_RECORD_CALLCHAIN_DEFERRED/ { in_cd = 1; d++; next }
			in_cd && /^\.\.\.\.\. / { if ($3 !~ /^ffffffffffff/) f++; next }
			in_cd && !/^\.\.\. FP chain/ { in_cd = 0 }
			END { printf "%d %d\n", d, f }'
}

# walk_run PROG LOOPS BUILD: the deferred walks of PROG's BUILD, timed
walk_run() {
	prog=$1 loops=$2 build=$3
	rc=0
	loop_run "$W/$prog-walks-$build" "$prog" "$loops" "$build" \
		-e cpu-clock -c 1000000 --call-graph fp,defer \
		-e "tracepoint/config=$walk_id,name=walk,call-graph=no,period=1/" \
		-e "tracepoint/config=$ret_id,name=walk_ret,call-graph=no,period=1/" ||
		rc=$?
	# Per thread, an entry's time to the next return's
	# shellcheck disable=SC2046 # two numbers
	set -- $("$PERF" script -i "$dir/perf.data" --ns -F tid,time,event 2>/dev/null |
		bb awk '$3 == "walk:" { t[$1] = $2 + 0; next }
			$3 == "walk_ret:" && ($1 in t) {
				n++; ns += ($2 - t[$1]) * 1e9; delete t[$1] }
			END { printf "%d %.0f\n", n, ns }')
	walks=${1:-0} ns=${2:-0}
	# shellcheck disable=SC2046 # two numbers
	set -- $(deferred_frames "$dir/perf.data")
	echo "# realstacks-walks: program=$prog build=$build rep=$rep walks=$walks ns=$ns frames=${2:-0} records=${1:-0} record=$rc"
	[ "$rc" = 0 ] || bb sed 's/^/# overhead-err: /' "$dir/err" | bb head -5
	rm -rf "$dir"
	return "$rc"
}

# profile_run PROG LOOPS BUILD: walk_run's workload under a profile of
# the guest's kernel; the walk's samples counted by function (PERIOD:
# see the header)
PERIOD=20011
profile_run() {
	prog=$1 loops=$2 build=$3
	rc=0
	dir=$W/$prog-profile-$build
	rm -rf "$dir"
	mkdir -p "$dir/work"
	export OVERHEAD_TIME=$dir/time
	# shellcheck disable=SC2046 # the command's words
	(cd "$dir/work" && "$PERF" record -q -a -e cpu-clock:k -c $PERIOD -g \
		--kernel-callchains -o "$dir/prof.data" -- \
		"$PERF" record -q -B -m 2M -o "$dir/perf.data" -e cpu-clock \
		-c 1000000 --call-graph fp,defer -- \
		/bin/sh "$RS/overhead.sh" loop "$loops" "$prog" \
		$(program_cmd "$prog" "$build")) >/dev/null 2>"$dir/err" || rc=$?
	# shellcheck disable=SC2046 # two numbers
	set -- $(deferred_frames "$dir/perf.data")
	throttled=$(stat_events "$dir/prof.data" THROTTLE)
	lost=0
	for f in "$dir/prof.data" "$dir/perf.data"; do
		for t in LOST LOST_SAMPLES; do
			lost=$((lost + $(stat_events "$f" $t)))
		done
	done
	# A sample's chain: one "address symbol" line per frame, leaf first,
	# then an empty line
	"$PERF" script -i "$dir/prof.data" -F ip,sym 2>/dev/null |
		bb awk -v tag="# realstacks-profile: program=$prog build=$build" \
		-v records="${1:-0}" -v frames="${2:-0}" \
		-v throttled="$throttled" -v lost="$lost" -v period="$PERIOD" '
		function flush(	i, j) {
			if (!n)
				return
			total++
			for (i = 1; i <= n; i++) {
				if (s[i] != "unwind_user_walk")
					continue
				walk++
				self[s[1]]++
				for (j = 1; j <= i; j++)
					seen[s[j]] = 1
				for (k in seen)
					incl[k]++
				split("", seen)
				break
			}
			n = 0
		}
		NF == 0 { flush(); next }
		{ s[++n] = NF > 1 ? $2 : "[unknown]" }
		END {
			flush()
			printf "%s period=%d total=%d walk=%d frames=%d records=%d throttled=%d lost=%d\n",
				tag, period, total, walk, frames, records, throttled, lost
			for (k in self)
				printf "%s self=%d sym=%s\n", tag, self[k], k
			for (k in incl)
				printf "%s incl=%d sym=%s\n", tag, incl[k], k
		}'
	[ "$rc" = 0 ] || {
		echo "# realstacks-error: $prog $build profile: perf record exited $rc"
		bb sed 's/^/# overhead-err: /' "$dir/err" | bb head -5
	}
	rm -rf "$dir"
	return "$rc"
}

# count_run PROG LOOPS BUILD: walk_run's workload again, COUNTED's
# calls counted (see the header)
# (Not __get_user_8(): exec, exit and perf call it too; the walk's calls
# are unwind_user_get_word()'s, one each.)
COUNTED="unwind_user_walk unwind_user_next unwind_user_frame_slot
unwind_user_get_word sframe_text_lookup sframe_find_fde
sframe_fde_find_row"
count_run() {
	prog=$1 loops=$2 build=$3
	rc=0 probes=0
	[ ! -e "$TRACING/events/count/enable" ] ||
		echo 0 >"$TRACING/events/count/enable"
	echo >"$TRACING/kprobe_events"
	for f in $COUNTED; do
		# the function's one text symbol: its name, or a clone's
		sym=$(bb awk -v f="$f" '($2 == "t" || $2 == "T") &&
			($3 == f || index($3, f ".isra.") == 1 ||
			 index($3, f ".constprop.") == 1) { n++; s = $3 }
			END { if (n == 1) print s; else print n + 0 " symbols" }' /proc/kallsyms)
		case $sym in *" symbols")
			echo "# realstacks-error: $prog $build count: $f is $sym in kallsyms, not one"
			probes=1
			continue ;;
		esac
		echo "p:count/$f $sym" >>"$TRACING/kprobe_events" 2>/dev/null || {
			echo "# realstacks-error: $prog $build count: no kprobe on $f ($sym)"
			probes=1
		}
	done
	echo 1 >"$TRACING/events/count/enable" || {
		echo "# realstacks-error: $prog $build count: the kprobes cannot be enabled"
		probes=1
	}
	loop_run "$W/$prog-count-$build" "$prog" "$loops" "$build" \
		-e cpu-clock -c 1000000 --call-graph fp,defer || rc=$?
	echo 0 >"$TRACING/events/count/enable"
	tag="# realstacks-profile: program=$prog build=$build"
	# kprobe_events: "p:count/NAME SYMBOL"; kprobe_profile: "NAME HITS
	# MISSES"
	bb awk -v tag="$tag" 'FNR == NR { n = $1; sub(/.*\//, "", n); sym[n] = $2; next }
		{ if (!($1 in sym)) next
		  printf "%s calls=%d sym=%s\n", tag, $2, sym[$1]; m += $3 }
		END { print m + 0 >"/dev/stderr" }' \
		"$TRACING/kprobe_events" "$TRACING/kprobe_profile" 2>"$dir/missed"
	lost=0
	for t in LOST LOST_SAMPLES; do
		lost=$((lost + $(stat_events "$dir/perf.data" $t)))
	done
	# shellcheck disable=SC2046 # two numbers
	set -- $(deferred_frames "$dir/perf.data")
	echo "$tag count_frames=${2:-0} count_records=${1:-0} missed=$(cat "$dir/missed") lost=$lost"
	echo >"$TRACING/kprobe_events"
	[ "$rc" = 0 ] || {
		echo "# realstacks-error: $prog $build count: perf record exited $rc"
		bb sed 's/^/# overhead-err: /' "$dir/err" | bb head -5
	}
	rm -rf "$dir"
	[ "$probes" = 0 ] || rc=1
	return "$rc"
}

echo "# realstacks-start: kernel=$(uname -r) plan=$plan reps=$reps"
echo "# realstacks-perf: $("$PERF" --version 2>&1 | head -1)"
status=0
loops_of=
for prog in $PROGRAMS; do
	# How many workloads make TARGET_CS: unprofiled ones, until a
	# tenth of it has passed
	dir=$W/calibrate
	rm -rf "$dir" && mkdir -p "$dir"
	n=0 t=0 t0=$(now_cs)
	while [ $((t * 10)) -lt "$TARGET_CS" ]; do
		# shellcheck disable=SC2046 # the command's words
		(cd "$dir" && /bin/sh "$RS/run.sh" workload "$prog" $(program_cmd "$prog" fp)) \
			>/dev/null 2>&1 || { echo "# realstacks-error: $prog's workload failed"; exit 1; }
		n=$((n + 1)) t=$(($(now_cs) - t0))
	done
	loops=$(((TARGET_CS * n + t - 1) / t))
	echo "# realstacks-overhead-calibrate: program=$prog runs=$n cs=$t loops=$loops"
	loops_of="$loops_of $prog=$loops"
done
if [ "$plan" = profile ]; then
	for pl in $loops_of; do
		for build in fp sframe; do
			profile_run "${pl%=*}" "${pl#*=}" "$build" || status=1
			count_run "${pl%=*}" "${pl#*=}" "$build" || status=1
		done
	done
	echo "# realstacks-end: profile"
	exit $status
fi
for rep in $(bb seq 1 "$reps"); do
	for pl in $loops_of; do
		prog=${pl%=*} loops=${pl#*=}
		for run in none:0 inplace:1000 deferred:1000 inplace:10000 deferred:10000; do
			time_run "$prog" "$loops" "${run%:*}" "${run#*:}" || status=1
		done
	done
done
if walk_probes; then
	for rep in $(bb seq 1 "$reps"); do
		for pl in $loops_of; do
			for build in fp sframe; do
				walk_run "${pl%=*}" "${pl#*=}" "$build" || status=1
			done
		done
	done
else
	echo "# realstacks-error: no kprobe events on unwind_user_walk under $TRACING"
	status=1
fi
echo "# realstacks-end: overhead"
exit $status
