#!/usr/bin/env python3
"""Run perf over crafted perf.data files under AddressSanitizer or valgrind.

usage: perf_sanitize.py [--valgrind] [--pipe] [-v] PERF DIR...

Every *.data file of the DIRs goes through 'perf script', 'perf script -D',
'perf script --no-merge-callchains', 'perf report -D --stdio' and 'perf
report --stdio' (with --pipe, also as a pipe-mode stream on stdin,
converted from the file, and the byte-swapped streams of be_unaligned()).
The *.data files are those the host tests craft: run them once with
VMTEST_PERF naming a wrapper that copies each '-i FILE' to DIR and execs
perf.  PERF is an ASan build (its reports go to
stderr) or, with --valgrind, a dynamically linked perf run under
valgrind's memcheck (in the guest's static perf memcheck cannot replace
malloc, so it sees no heap bounds, and static glibc's own code reports
uninitialised values).  A
run fails on a sanitizer or memcheck report, or a signal; perf's own exit
code (an error for a hostile file) is fine.  Prints one line per failed
run and the counts; exits 1 if any run failed.
"""
import glob
import os
import struct
import subprocess
import sys
import tempfile

COMMANDS = [["script"], ["script", "-D"], ["script", "--no-merge-callchains"],
            ["report", "-D", "--stdio"], ["report", "--stdio"]]
MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
           "== ERROR SUMMARY:", "Invalid read", "Invalid write",
           "uninitialised value", "Conditional jump")


def to_pipe(path, out):
    """The pipe-mode stream of perf.data file PATH: header, one
    PERF_RECORD_HEADER_ATTR per attr (with its ids), the data section."""
    with open(path, "rb") as f:
        b = f.read()
    attr_size, attrs_off, attrs_len, data_off, data_len = \
        struct.unpack_from("<QQQQQ", b, 16)[0:1] + struct.unpack_from("<QQQQ", b, 24)
    recs = []
    for off in range(attrs_off, attrs_off + attrs_len, attr_size):
        a = b[off:off + attr_size - 16]
        ids_off, ids_len = struct.unpack_from("<QQ", b, off + attr_size - 16)
        body = a + b[ids_off:ids_off + ids_len]
        recs.append(struct.pack("<IHH", 64, 0, 8 + len(body)) + body)
    with open(out, "wb") as f:
        f.write(b"PERFILE2" + struct.pack("<Q", 16) + b"".join(recs) +
                b[data_off:data_off + data_len])


def be_unaligned(d):
    """Big-endian pipe streams (perf swaps every record) with a
    PERF_RECORD_CALLCHAIN_DEFERRED, or a SAMPLE, of 8196 bytes: larger
    than perf's first read buffer, so read into one of exactly that size,
    and not a multiple of 8."""
    def rec(rtype, body, size):
        return struct.pack(">IHH", rtype, 0, size) + body
    attr = struct.pack(">IIQQQQQ", 1, 136, 0, 4000, 1 | 2 | 4 | 32 | 256, 0, 0).ljust(136, b"\0")
    head = struct.pack(">QQ", 0x32454c4946524550, 16) + rec(64, attr, 144)
    paths = []
    for name, rtype in (("be-unaligned-deferred", 22), ("be-unaligned-sample", 9)):
        p = os.path.join(d, name + ".pipe")
        with open(p, "wb") as f:
            f.write(head + rec(rtype, b"\0" * 8188, 8196))
        paths.append(p)
    return paths


def run(perf, args, stdin_path, valgrind):
    cmd = [perf, *args]
    if valgrind:
        cmd = ["/usr/bin/valgrind", "--tool=memcheck", "--error-exitcode=99",
               "--track-origins=yes", "--leak-check=no", "-q", *cmd]
    env = {**os.environ, "PERF_PAGER": "cat", "HOME": "/nonexistent",
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=98"}
    with open(stdin_path or os.devnull, "rb") as stdin:
        r = subprocess.run(cmd, stdin=stdin, capture_output=True, env=env, timeout=600)
    err = r.stderr.decode(errors="replace")
    bad = r.returncode < 0 or r.returncode in (98, 99) or any(m in err for m in MARKERS)
    return r.returncode, bad, err


def main(argv):
    valgrind = "--valgrind" in argv
    pipe = "--pipe" in argv
    verbose = "-v" in argv
    argv = [a for a in argv if not a.startswith("-")]
    perf, dirs = argv[0], argv[1:]
    files = sorted(f for d in dirs for f in glob.glob(os.path.join(d, "*.data")))
    tmp = tempfile.mkdtemp(prefix="perf-sanitize-")
    # (name, how, perf's input options, file on stdin)
    inputs = []
    for path in files:
        inputs.append((os.path.basename(path), "file", ["-i", path], None))
        if pipe:
            p = os.path.join(tmp, os.path.basename(path) + ".pipe")
            to_pipe(path, p)
            inputs.append((os.path.basename(path), "pipe", ["-i", "-"], p))
    if pipe:
        inputs += [(os.path.basename(p), "pipe", ["-i", "-"], p)
                   for p in be_unaligned(tmp)]
    runs = failed = 0
    for name, mode, iargs, stdin in inputs:
        for c in COMMANDS:
            rc, bad, err = run(perf, [*c, *iargs], stdin, valgrind)
            runs += 1
            if bad:
                failed += 1
                print(f"FAIL {name} {mode} perf {' '.join(c)}: exit {rc}")
                print("\n".join("    " + l for l in err.splitlines()[:60]))
            elif verbose:
                print(f"ok   {name} {mode} perf {' '.join(c)}: exit {rc}")
    print(f"{len(files)} files, {runs} runs, {failed} with a sanitizer/memcheck report or signal")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
