"""make bench, the host side: judge, summarise and plot one bench run.

usage: python3 -m ci.judge.bench RUN_DIR [--no-plot] [--system-map FILE]

RUN_DIR holds what ci/guest/vm.py saved of a guest that ran selftests/bench
(results.log: its bench-* lines; console.log; run.json). Writes there:

  runs.csv      one line per run, the guest's raw counts
  summary.csv   one line per workload, events and K: medians and ratios
  summary.json  both of the above, with the run's facts
  summary.txt   the headline numbers (make send's cover letter quotes it)
  bench.png     bytes per sample and overhead per mode and K
  fallbacks.txt where the deferred modes' samples that fell back to an
                in-place walk were taken: their innermost kernel frames
                (bench-fallback lines), named with --system-map, summed
                over the repetitions per workload and K

and prints the table. Metrics, per workload, event kind and K, the median
of the repetitions of each mode:

  bytes/sample  (PERF_RECORD_SAMPLE + PERF_RECORD_CALLCHAIN_DEFERRED bytes
                of the workload) / its samples
  floor         the model's deferred bytes: none's bytes + 16 (the
                PERF_CONTEXT_USER_DEFERRED marker and the cookie) + the
                mean record size / samples per entry; dev, how far the
                deferred bytes are from it; -fb, the same without the
                user chains of the samples that fell back to an in-place
                walk (taken after their entry's record was written)
  rec/entry     deferred records per sampled kernel entry per receiving
                buffer (1.00 at most)
  walks/entry   user stack walks counted in the kernel per sampled kernel
                entry, by kprobe counters: inpl, perf_callchain_user() of
                the in-place mode; defer, unwind_user_walk() of the
                deferred mode (1.00 at most, whatever K); fallbk, the
                deferred mode's perf_callchain_user(): samples taken
                after their entry's record was written are walked in
                place (the series' fallback), one walk each
  overhead      the workload's wall time / none's
  walk ns       the walktime mode (deferred, with each deferred walk timed
                by a kprobe and a kretprobe on unwind_user_walk(), the
                probes' cost included): the median time of one walk, for
                the long workloads built with frame pointers and their
                -sf twins built without, with .sframe; summary.txt
                compares each pair (the SFrame walk's cost)
  shared        (summary.txt, bench-shared lines) the shared mode: perf's
                deferred samples and ftrace's userstacktrace_delay on the
                workload's reads in the same runs; walks per entry either
                asked for (1.00: one walk for both), against what the two
                would walk apart

Exit: 0 the run is whole (ci/judge/vmtest/rundir.py: done marker, whole
console, no splat, no new taint; and every run reported), 1
it is not, or deferral broke its limits (more than one record or walk per
entry); 2 no run in RUN_DIR. Timings are never judged: TCG times are
noisy, only their ratios mean something.
"""
from .chart import plot
from .cli import main
from .columns import COLUMNS, HEADER, table
from .summary import headline, headline_rows, walk_costs
from .judge import EXTRA_WALKS, LIMIT, LIMIT_SLACK, limit_failures, problems
from .lines import parse
from .model import DEFERRED_MODES, MARKER_BYTES, MODES, TIMED, aggregate
from .outputs import RUN_FIELDS, flat, write_all
from .symbols import fallback_report, read_system_map, symbolize

# One module per job; the package's name is the API the tests use.
__all__ = ["plot", "main", "COLUMNS", "HEADER", "table", "headline",
           "headline_rows", "walk_costs", "EXTRA_WALKS", "LIMIT",
           "LIMIT_SLACK", "limit_failures", "problems", "parse", "DEFERRED_MODES",
           "MARKER_BYTES", "MODES", "TIMED", "aggregate", "RUN_FIELDS",
           "flat", "write_all", "fallback_report", "read_system_map",
           "symbolize"]
