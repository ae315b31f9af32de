#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# make realstacks' guest runner (packed as /realstacks/run.sh by
# ci/guest/mkinitramfs.sh; ci/guest/init runs it when the kernel command
# line says vmtest.realstacks=PLAN). It runs on the host too:
#
#   RS=build/realstacks/guest PERF=/path/to/perf sh run.sh [PLAN]
#
# PLAN: "all", or PROGRAM:BUILD[:ENTRY] items separated by commas
# (xz:fp,gzip:deb:libc; "all" for every program, build or entry:
# sqlite3:all, all:sframe, xz:fp:all). ENTRY is where the traced calls
# enter the kernel: "shim" (the default: the shim's own syscall
# instruction, so the record's frames above the shim's are the
# program's) or "libc" (the shim jumps to libc's wrapper, which enters
# the kernel: what a user gets through libc; REALSTACKS_MODE=libc).
# "all" alone is every program and build, shim entry only (all:all:all
# adds libc's). The plan word "data" brings each run's perf.data back
# too, and for a deferred run the workload's recording on cpu-clock,
# sampled.data (in the run's data, for the host tests' recordings of a
# real program: make guest-recording). For each item and each mode, deferred (perf record
# --call-graph fp,defer) and in place (--call-graph fp), it runs the
# program's fixed workload under perf record, every entry of the traced
# system calls sampled (-c 1), with the shim preloaded into the program
# (ld.so --preload: the shell and busybox around it never get it), then
# perf script, then checks the workload's output. The shim's log, perf
# script's text and both perf commands' messages go to stdout as a
# gzipped tar in base64 between "# realstacks-data: NAME" and
# "# realstacks-data-end: NAME" lines; the host compares them
# (ci/judge/realstacks/). Exit 0 when every run was made, 1 when one
# could not be (named on a "# realstacks-error:" line), 2 for a bad plan.
#
#   run.sh workload PROGRAM COMMAND...   the workload alone (under perf)
#   run.sh overhead [REPS]               what sampling costs (overhead.sh)
#   run.sh profile                       where the walks' time goes (same)
RS=${RS:-$(cd "$(dirname "$0")" && pwd)}
PERF=${PERF:-/bin/perf}
W=${W:-/tmp/realstacks}
TRACING=${TRACING:-/sys/kernel/tracing}
PROGRAMS="xz gzip sqlite3"
BUILDS="deb fp sframe"
ENTRIES="shim libc"
MODES=${REALSTACKS_MODES:-"deferred inplace"}
# Absolute paths: each run works in a directory of its own
RS=$(cd "$RS" && pwd)
case $PERF in */*) PERF=$(cd "$(dirname "$PERF")" && pwd)/${PERF##*/} ;; esac
mkdir -p "$W" && W=$(cd "$W" && pwd)
bb() { # a busybox applet whatever the PATH holds (the host's own tools too)
	if command -v busybox >/dev/null 2>&1; then busybox "$@"; else "$@"; fi
}

# The system calls each program's entries are taken at: the ones it makes
# through libc's exported functions (the shim sees only those).
calls_of() {
	case $1 in
	xz | gzip) echo read,write ;;
	sqlite3) echo read,write,pread64,pwrite64 ;;
	esac
}

# workload PROGRAM COMMAND...: PROGRAM's fixed work, in the current
# directory, COMMAND running the program.
workload() {
	prog=$1
	shift
	case $prog in
	xz)
		"$@" -T1 -6 -c "$RS/input/data.txt" >out.xz &&
			"$@" -T1 -d -c out.xz >out.txt ;;
	gzip)
		"$@" -6 -n -c "$RS/input/data.txt" >out.gz &&
			"$@" -d -c out.gz >out.txt ;;
	sqlite3)
		rm -f db.sqlite &&
			"$@" db.sqlite <"$RS/input/build.sql" >out.txt &&
			"$@" db.sqlite <"$RS/input/query.sql" >>out.txt ;;
	*) return 2 ;;
	esac
}

# check PROGRAM: the workload's output, as a word
check() {
	case $1 in
	xz | gzip) bb cmp -s "$RS/input/data.txt" out.txt && echo ok || echo wrong-output ;;
	sqlite3) echo "md5=$(bb md5sum <out.txt | bb cut -d' ' -f1)" ;;
	esac
}

if [ "${1:-}" = workload ]; then
	shift
	workload "$@"
	exit $?
fi
# plan "overhead": what sampling costs the programs (overhead.sh), no
# stack compared; plan "profile": where the deferred walks' time goes
case ${1:-} in
overhead) shift; exec /bin/sh "$RS/overhead.sh" "$@" ;;
profile) exec /bin/sh "$RS/overhead.sh" "$@" ;;
esac

plan=${1:-all}
rows= keep=
for want in $(echo "$plan" | bb tr , ' '); do
	case $want in
	data) keep=perf.data; continue ;;
	all) want=all:all:shim ;;
	*:*:*:*) echo "# realstacks-error: plan item '$want' is not PROGRAM:BUILD[:ENTRY]"; exit 2 ;;
	*:*:*) ;;
	*:*) want=$want:shim ;;
	*) echo "# realstacks-error: plan item '$want' is not PROGRAM:BUILD[:ENTRY]"; exit 2 ;;
	esac
	wp=${want%%:*} we=${want##*:} wb=${want#*:}
	wb=${wb%:*}
	[ "$wp" = all ] && wp='*'
	[ "$wb" = all ] && wb='*'
	[ "$we" = all ] && we='*'
	hit=
	for p in $PROGRAMS; do
		for b in $BUILDS; do
			for e in $ENTRIES; do
				# shellcheck disable=SC2254
				case $p in $wp) ;; *) continue ;; esac
				# shellcheck disable=SC2254
				case $b in $wb) ;; *) continue ;; esac
				# shellcheck disable=SC2254
				case $e in $we) ;; *) continue ;; esac
				hit=y
				case " $rows " in *" $p:$b:$e "*) ;; *) rows="$rows $p:$b:$e" ;; esac
			done
		done
	done
	[ -n "$hit" ] || { echo "# realstacks-error: plan item '$want' names no program, build and entry"; exit 2; }
done

[ -n "$rows" ] || { echo "# realstacks-error: plan '$plan' names no program"; exit 2; }
echo "# realstacks-start: kernel=$(uname -r) plan=$plan rows=$(echo $rows | wc -w)"
echo "# realstacks-perf: $("$PERF" --version 2>&1 | head -1)"
[ -r "$RS/manifest" ] && sed 's/^/# realstacks-manifest: /' "$RS/manifest"
status=0 runs=0
for row in $rows; do
	prog=${row%%:*} entry=${row##*:} build=${row#*:}
	build=${build%:*}
	calls=$(calls_of "$prog")
	events=
	for c in $(echo "$calls" | bb tr , ' '); do
		id=$(cat "$TRACING/events/syscalls/sys_enter_$c/id" 2>/dev/null)
		if [ -z "$id" ]; then
			echo "# realstacks-error: no tracepoint syscalls/sys_enter_$c under $TRACING"
			exit 1
		fi
		events="$events -e tracepoint/config=$id,name=$c/"
	done
	for mode in $MODES; do
		case $mode in
		deferred) cg=fp,defer merge=--no-merge-callchains ;;
		inplace) cg=fp merge= ;;
		*) echo "# realstacks-error: mode '$mode'"; exit 2 ;;
		esac
		name=$prog-$build-$entry-$mode
		dir=$W/$name
		rm -rf "$dir"
		mkdir -p "$dir/work"
		# The program through bookworm's loader, the shim preloaded
		cmd="$RS/lib/ld-linux-x86-64.so.2 --library-path $RS/lib --preload $RS/shim.so $RS/$build/$prog"
		# shellcheck disable=SC2086
		(cd "$dir/work" && REALSTACKS_LOG=$dir/shim.log REALSTACKS_CALLS=$calls \
			REALSTACKS_MODE=$entry \
			"$PERF" record -k monotonic $events -c 1 --call-graph "$cg" \
			--user-callchain --user-regs=di,si,dx -m 2M -o "$dir/perf.data" \
			-- /bin/sh "$RS/run.sh" workload "$prog" $cmd) \
			>"$dir/record.out" 2>"$dir/record.err"
		rc=$?
		ok=$(cd "$dir/work" && check "$prog")
		kept=$keep
		if [ -n "$keep" ] && [ "$mode" = deferred ]; then
			# The same workload sampled on a software event too, without
			# the shim: a recording readers that need tracepoints' trace
			# data can read (this static perf, without libtraceevent,
			# writes none). No truth to judge it by: the host tests
			# compare it with what the series' perf prints of it.
			plain="$RS/lib/ld-linux-x86-64.so.2 --library-path $RS/lib $RS/$build/$prog"
			# shellcheck disable=SC2086
			(cd "$dir/work" && "$PERF" record -k monotonic -e cpu-clock -c 100000 \
				--call-graph fp,defer -m 2M -o "$dir/sampled.data" \
				-- /bin/sh "$RS/run.sh" workload "$prog" $plain) \
				>/dev/null 2>"$dir/sampled.err" && kept="$keep sampled.data"
		fi
		# shellcheck disable=SC2086
		"$PERF" script -i "$dir/perf.data" -F tid,time,event,ip,sym,uregs --ns \
			$merge >"$dir/script.txt" 2>"$dir/script.err"
		src=$?
		runs=$((runs + 1))
		echo "# realstacks-run: program=$prog build=$build entry=$entry mode=$mode calls=$calls record=$rc script=$src check=$ok"
		[ "$rc" = 0 ] && [ "$src" = 0 ] || status=1
		echo "# realstacks-data: $name"
		(cd "$dir" && bb tar -cf - shim.log script.txt record.err script.err $kept 2>/dev/null) |
			bb gzip -c | bb base64
		echo "# realstacks-data-end: $name"
		rm -rf "$dir"
	done
done
echo "# realstacks-end: runs=$runs"
exit $status
