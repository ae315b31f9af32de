"""The series' perf tools on crafted perf.data files (tests/perfdata.py):
what needs no guest.  The text deferred callchains print as (the same as
upstream perf prints, which scripts parse), hostile records rejected with
their offset, samples whose record never came, held samples released per
thread, and files written by a newer perf.

perf is the guest's static perf, which runs on the host too: 'make
test-perf' names the tree's in $VMTEST_PERF (make test leaves these
cases to it); a bare pytest run tries build/out/linux/perf/perf and
skips without one.
"""
import os
import re
import struct
import subprocess

import pytest

import perfdata as pd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERF = os.environ.get("VMTEST_PERF") or os.path.join(ROOT, "build", "out", "linux", "perf", "perf")

# 'make test-perf' names the perf it built: missing, that is a failure.
if os.environ.get("VMTEST_PERF") and not os.access(PERF, os.X_OK):
    raise RuntimeError(f"VMTEST_PERF={PERF}: not an executable perf")
pytestmark = pytest.mark.skipif(not os.access(PERF, os.X_OK),
                                reason=f"no perf built ({PERF}): run 'make test-perf'")


def perf(*args, check=True):
    r = subprocess.run([PERF, *args], capture_output=True, text=True,
                       env={**os.environ, "PERF_PAGER": "cat", "HOME": "/nonexistent"},
                       timeout=120)
    assert r.returncode >= 0, \
        f"perf {' '.join(args)} killed by signal {-r.returncode}:\n{r.stderr}"
    if check:
        assert r.returncode == 0, f"perf {' '.join(args)}: exit {r.returncode}\n{r.stderr}"
    return r


@pytest.fixture
def basic(tmp_path):
    path = str(tmp_path / "basic.data")
    pd.deferred_recording(path, threads=2, entries=2)
    return path


def blocks(text):
    """perf script output: one list of lines per sample or record."""
    return [b.splitlines() for b in text.strip().split("\n\n") if b.strip()]


def test_merged_by_default(basic):
    out = perf("script", "-i", basic, "-F", "tid,ip").stdout
    for b in blocks(out):
        ips = [int(x.split()[0], 16) for x in b[1:]]
        assert ips == pd.KERNEL_IPS + pd.USER_IPS, b


def test_no_merge_prints_records_as_upstream(basic):
    out = perf("script", "-i", basic, "-F", "tid,ip", "--no-merge-callchains").stdout
    recs = [b for b in blocks(out) if "DEFERRED CALLCHAIN" in b[0]]
    samples = [b for b in blocks(out) if "DEFERRED CALLCHAIN" not in b[0]]
    assert len(recs) == 4 and len(samples) == 8
    assert re.fullmatch(r"\s*100 DEFERRED CALLCHAIN \[cookie: 1001\]", recs[0][0]), recs[0]
    assert [int(x.split()[0], 16) for x in recs[0][1:]] == pd.USER_IPS
    # An unmerged sample ends with its cookie where its user part would be.
    assert [int(x.split()[0], 16) for x in samples[0][1:]] == pd.KERNEL_IPS + [0x1001]


@pytest.mark.parametrize("tool", ["script", "report"])
def test_raw_dump_as_upstream(basic, tool):
    out = perf(tool, "-D", "-i", basic).stdout
    assert re.search(r"^\d+ 0x[0-9a-f]+ \[0x40\]: PERF_RECORD_CALLCHAIN_DEFERRED"
                     r"\(IP, 0x2\): 100/100: 0x1001$", out, re.M), out[:3000]
    assert re.search(r"^\.\.\.\.\.  3: fffffffffffffd80 \(PERF_CONTEXT_USER_DEFERRED\)$",
                     out, re.M), out[:3000]
    # The record's addresses follow it.
    at = out.index("PERF_RECORD_CALLCHAIN_DEFERRED(IP")
    assert ".....  0: 0000000000401000\n" in out[at:at + 300]


def hostile(tmp_path, size=None, nr=None):
    recs = [pd.comm(100, 100, "t0", 1),
            pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001)]
    rec = pd.callchain_deferred(100, 100, 6, 0x1001, pd.USER_IPS, size=size)
    if nr is not None:
        rec = rec[:16] + nr.to_bytes(8, "little") + rec[24:]
    recs.append(rec)
    path = str(tmp_path / "hostile.data")
    pd.write(path, recs)
    return path, 104 + 152 + sum(len(r) for r in recs[:2])


# The record is 64 bytes: header, cookie, nr, 3 addresses, and a 16-byte
# sample_id trailer (TID, TIME) that nr must not claim either.
@pytest.mark.parametrize("size,nr", [(8, None), (16, None), (20, None), (24, None),
                                     (32, None), (None, 4), (None, 1 << 60)])
@pytest.mark.parametrize("args", [["script"], ["script", "--no-merge-callchains"],
                                  ["script", "-D"], ["report", "--stdio"],
                                  ["report", "-D"]])
def test_malformed_record_rejected_with_offset(tmp_path, size, nr, args):
    path, off = hostile(tmp_path, size, nr)
    r = perf(*args, "-i", path, check=False)
    # An error, as perf script has always made it; perf report too.
    assert r.returncode != 0, f"perf {' '.join(args)}: exit 0\n{r.stderr}"
    assert f"{off:#x} [" in r.stderr and "malformed PERF_RECORD_CALLCHAIN_DEFERRED" in r.stderr, \
        r.stderr
    assert "DEFERRED CALLCHAIN [cookie" not in r.stdout


def other_malformed(tmp_path, kind):
    """A file whose third record is malformed in a way perf checked
    before the series: a SAMPLE whose callchain nr runs past its end
    (perf cannot parse it), a record smaller than its header, a record
    of an unknown type whose size is not a multiple of 8."""
    recs = [pd.comm(100, 100, "t0", 1),
            pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001)]
    if kind == "sample-nr":
        rec = pd.sample(100, 100, 6, [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS)
        rec = rec[:40] + (1000).to_bytes(8, "little") + rec[48:]
        msg = "Can't parse sample"
    elif kind == "short-header":
        rec = struct.pack("<IHH", pd.RECORD_SAMPLE, 0, 4) + b"\0" * 4
        msg = "[0x4]: failed to process type: 9"
    else:
        rec = pd._record(30, 0, b"\0" * 12)
        msg = "[0x14]: failed to process type: 30"
    path = str(tmp_path / f"{kind}.data")
    pd.write(path, recs + [rec])
    return path, msg


@pytest.mark.parametrize("kind", ["sample-nr", "short-header", "unaligned-unknown"])
@pytest.mark.parametrize("args", [["script"], ["report", "--stdio"], ["report", "-D"],
                                  ["report", "--stdio", "--no-children", "-g", "caller"]])
def test_malformed_records_fail_every_tool(tmp_path, kind, args):
    """perf script has always exited with an error on a record it cannot
    process; perf report printed the same error and exited 0, for every
    kind of malformed record, so a script could not tell a truncated
    report from a whole one.  Both fail now."""
    path, msg = other_malformed(tmp_path, kind)
    r = perf(*args, "-i", path, check=False)
    assert msg in r.stderr, r.stderr
    assert r.returncode != 0, f"perf {' '.join(args)}: exit 0\n{r.stderr}"


def test_sample_without_record_shows_cookie_and_is_counted(tmp_path):
    path = str(tmp_path / "orphan.data")
    pd.write(path, [pd.comm(100, 100, "t0", 1),
                    pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001)])
    r = perf("script", "-i", path, "-F", "tid,ip")
    assert [int(x.split()[0], 16) for x in blocks(r.stdout)[0][1:]] == pd.KERNEL_IPS + [0x1001]
    assert "1 samples without a deferred callchain" in r.stderr


def test_older_entry_released_when_a_newer_record_comes(tmp_path):
    """Thread 100's first entry lost its record: its samples come out
    unmerged when the second entry's record arrives, not at the end."""
    path = str(tmp_path / "lost.data")
    pd.write(path, [
        pd.comm(100, 100, "t0", 1), pd.comm(101, 101, "t1", 1),
        pd.deferred_sample(100, 100, 10, pd.KERNEL_IPS, 0x1001),
        pd.deferred_sample(101, 101, 11, pd.KERNEL_IPS, 0x1002),  # never merged
        pd.deferred_sample(100, 100, 20, pd.KERNEL_IPS, 0x2001),
        pd.callchain_deferred(100, 100, 21, 0x2001, pd.USER_IPS),
        pd.finished_round(),
        pd.deferred_sample(100, 100, 30, pd.KERNEL_IPS, 0x3001),
        pd.callchain_deferred(100, 100, 31, 0x3001, pd.USER_IPS),
    ])
    r = perf("script", "-i", path, "-F", "tid,ip")
    got = [(b[0].split()[0], int(b[-1].split()[0], 16)) for b in blocks(r.stdout)]
    assert got == [("100", 0x1001), ("100", pd.USER_IPS[-1]),
                   ("100", pd.USER_IPS[-1]), ("101", 0x1002)], r.stdout
    assert "2 samples without a deferred callchain" in r.stderr


def test_thread_without_records_holds_a_few_entries(tmp_path):
    """Thread 100 loses every record: when its fifth and sixth entries
    come, its oldest entries come out unmerged, before thread 101's
    sample (merged when its record arrives) and not all at the end."""
    path = str(tmp_path / "norecords.data")
    recs = [pd.comm(100, 100, "t0", 1), pd.comm(101, 101, "t1", 1),
            pd.deferred_sample(101, 101, 2, pd.KERNEL_IPS, 0x1002)]
    recs += [pd.deferred_sample(100, 100, 10 + e, pd.KERNEL_IPS, (e + 1) << 12 | 1)
             for e in range(6)]
    recs += [pd.callchain_deferred(101, 101, 100, 0x1002, pd.USER_IPS)]
    pd.write(path, recs)
    r = perf("script", "-i", path, "-F", "tid,ip")
    got = [(b[0].split()[0], int(b[-1].split()[0], 16)) for b in blocks(r.stdout)]
    assert got == [("100", 0x1001), ("100", 0x2001), ("101", pd.USER_IPS[-1]),
                   ("100", 0x3001), ("100", 0x4001), ("100", 0x5001),
                   ("100", 0x6001)], r.stdout
    assert "6 samples without a deferred callchain" in r.stderr


def test_exit_releases_the_thread(tmp_path):
    path = str(tmp_path / "exit.data")
    pd.write(path, [
        pd.comm(100, 100, "t0", 1), pd.comm(101, 101, "t1", 1),
        pd.deferred_sample(100, 100, 10, pd.KERNEL_IPS, 0x1001),
        pd.exit_(100, 100, 12),
        pd.deferred_sample(101, 101, 13, pd.KERNEL_IPS, 0x1002),
        pd.callchain_deferred(101, 101, 14, 0x1002, pd.USER_IPS),
    ])
    r = perf("script", "-i", path, "-F", "tid,ip")
    got = [(b[0].split()[0], int(b[-1].split()[0], 16)) for b in blocks(r.stdout)]
    assert got == [("100", 0x1001), ("101", pd.USER_IPS[-1])], r.stdout


def test_inject_passes_records_through(basic, tmp_path):
    out = str(tmp_path / "injected.data")
    perf("inject", "-i", basic, "-o", out)
    r = perf("script", "-i", out, "-F", "tid,ip", "--no-merge-callchains")
    assert r.stdout.count("DEFERRED CALLCHAIN [cookie:") == 4
    r = perf("script", "-i", out, "-F", "tid,ip")
    assert "DEFERRED CALLCHAIN" not in r.stdout
    assert all(int(b[-1].split()[0], 16) == pd.USER_IPS[-1] for b in blocks(r.stdout))


# Pipe mode ('perf record -o - | perf script'): the records come through a
# stream read record by record, not a mapped file; the merged stacks must
# be the same.

def addresses(text):
    """perf script -F tid,ip output as (first line, addresses) per block;
    in pipe mode perf adds the symbol column, so only addresses count."""
    return [(b[0].split(), [int(x.split()[0], 16) for x in b[1:]]) for b in blocks(text)]


def perf_stdin(path, *args):
    with open(path, "rb") as f:
        r = subprocess.run([PERF, *args, "-i", "-"], stdin=f, capture_output=True,
                           text=True, timeout=120,
                           env={**os.environ, "PERF_PAGER": "cat", "HOME": "/nonexistent"})
    assert r.returncode >= 0, f"perf {' '.join(args)} killed by signal {-r.returncode}"
    return r


@pytest.mark.parametrize("how", ["crafted", "inject"])
def test_pipe_gives_the_same_stacks_as_the_file(tmp_path, how):
    """Two threads, three entries of two samples each, every third
    record lost: a pipe gives the same merged and unmerged samples, in
    the same order, and the same count of samples left unmerged, as the
    file."""
    path, pipe = str(tmp_path / "rec.data"), str(tmp_path / "rec.pipe")
    kw = dict(threads=2, entries=3, lose_every=3, round_every=2)
    pd.deferred_recording(path, **kw)
    if how == "crafted":
        pd.deferred_recording(pipe, pipe=True, **kw)
    else:
        with open(pipe, "wb") as f:
            subprocess.run([PERF, "inject", "-i", path, "-o", "-"], stdout=f, check=True,
                           timeout=120)
    for args in (["-F", "tid,ip"], ["-F", "tid,ip", "--no-merge-callchains"]):
        from_file = perf("script", "-i", path, *args)
        from_pipe = perf_stdin(pipe, "script", *args)
        assert from_pipe.returncode == 0, from_pipe.stderr
        assert addresses(from_pipe.stdout) == addresses(from_file.stdout), from_pipe.stdout
        if "--no-merge-callchains" not in args:
            assert "4 samples without a deferred callchain" in from_file.stderr
            assert "4 samples without a deferred callchain" in from_pipe.stderr
            merged = [ips for _, ips in addresses(from_file.stdout)
                      if ips == pd.KERNEL_IPS + pd.USER_IPS]
            assert len(merged) == 8, from_file.stdout
    r = perf_stdin(pipe, "report", "--stdio", "--no-children")
    assert r.returncode == 0 and "0x401200" in r.stdout, r.stderr


def test_malformed_record_in_a_pipe_rejected_with_offset(tmp_path):
    """The same check in pipe mode; the offset is the stream's after its
    16-byte header, as 'perf script -D' counts in pipe mode."""
    recs = [pd.comm(100, 100, "t0", 1),
            pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001),
            pd.callchain_deferred(100, 100, 6, 0x1001, pd.USER_IPS, size=20)]
    path = str(tmp_path / "hostile.pipe")
    pd.write(path, recs, pipe=True)
    off = 8 + pd.ATTR_SIZE_612 + sum(len(r) for r in recs[:2])
    for args in (["script"], ["script", "--no-merge-callchains"], ["script", "-D"],
                 ["report", "--stdio"], ["report", "-D"]):
        r = perf_stdin(path, *args)
        assert r.returncode != 0, f"perf {' '.join(args)}: exit 0\n{r.stderr}"
        assert f"{off:#x} [0x14]: malformed PERF_RECORD_CALLCHAIN_DEFERRED" in r.stderr, r.stderr
        assert "DEFERRED CALLCHAIN [cookie" not in r.stdout


# Files written by a newer perf (upstream 7.x): a larger perf_event_attr,
# feature bits and record types this perf does not know.

def newer_file(tmp_path, attr_size=pd.ATTR_SIZE_612 + 16, extra=b"", features=(),
               records=()):
    path = str(tmp_path / "newer.data")
    recs = [pd.comm(100, 100, "t0", 1),
            pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001),
            *records,
            pd.callchain_deferred(100, 100, 6, 0x1001, pd.USER_IPS)]
    pd.write(path, recs, attrs=[pd.attr(size=attr_size, extra=extra)], features=features)
    return path


@pytest.mark.parametrize("attr_size", [pd.ATTR_SIZE_612 + 8, pd.ATTR_SIZE_612 + 16,
                                       pd.ATTR_SIZE_612 + 64 + 24])
def test_larger_attr_with_zero_extra_is_read(tmp_path, attr_size):
    path = newer_file(tmp_path, attr_size=attr_size)
    r = perf("script", "-i", path, "-F", "tid,ip", "-v")
    assert [int(x.split()[0], 16) for x in blocks(r.stdout)[0][1:]] == \
        pd.KERNEL_IPS + pd.USER_IPS
    assert "newer perf" in r.stderr and "all zero, ignored" in r.stderr
    perf("report", "--stdio", "-i", path)
    r = perf("evlist", "-v", "-i", path)
    assert "defer_callchain: 1" in r.stdout


def test_larger_attr_with_set_extra_is_refused_clearly(tmp_path):
    path = newer_file(tmp_path, extra=b"\0\0\0\1")
    r = perf("script", "-i", path, check=False)
    assert r.returncode != 0
    assert ("perf_event_attr fields this perf does not know (byte 139 of the file's "
            "152 byte attr is set") in r.stderr, r.stderr


def test_unknown_feature_bits_are_ignored(tmp_path):
    path = newer_file(tmp_path, features=(40, 100, 255))
    r = perf("script", "-i", path, "-F", "tid,ip", "-v")
    assert [int(x.split()[0], 16) for x in blocks(r.stdout)[0][1:]] == \
        pd.KERNEL_IPS + pd.USER_IPS
    assert "feature 40 of a newer perf" in r.stderr


@pytest.mark.parametrize("rtype", [30, 90])
def test_unknown_record_types_are_skipped(tmp_path, rtype):
    unknown = pd._record(rtype, 0, b"\0" * 16)
    path = newer_file(tmp_path, records=[unknown])
    r = perf("script", "-i", path, "-F", "tid,ip")
    assert [int(x.split()[0], 16) for x in blocks(r.stdout)[0][1:]] == \
        pd.KERNEL_IPS + pd.USER_IPS
    assert f"Skipping records of type {rtype}, the first at 0x" in r.stderr


# The same attr through a pipe ('perf record -o - | perf script' of a newer
# perf): PERF_RECORD_HEADER_ATTR records instead of the file's attr section.

def newer_pipe(tmp_path, attr_size=pd.ATTR_SIZE_612 + 16, extra=b""):
    path = str(tmp_path / "newer.pipe")
    pd.write(path, [pd.comm(100, 100, "t0", 1),
                    pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001),
                    pd.callchain_deferred(100, 100, 6, 0x1001, pd.USER_IPS)],
             attrs=[pd.attr(size=attr_size, extra=extra)], pipe=True)
    return path


@pytest.mark.parametrize("attr_size", [pd.ATTR_SIZE_612 + 8, pd.ATTR_SIZE_612 + 16])
def test_pipe_larger_attr_with_zero_extra_is_read(tmp_path, attr_size):
    path = newer_pipe(tmp_path, attr_size=attr_size)
    r = perf_stdin(path, "script", "-F", "tid,ip", "-v")
    assert r.returncode == 0, r.stderr
    assert addresses(r.stdout)[0][1] == pd.KERNEL_IPS + pd.USER_IPS
    assert "newer perf" in r.stderr and "all zero, ignored" in r.stderr, r.stderr
    # What this perf writes of it again is what it knows: read back the same.
    injected = str(tmp_path / "injected.pipe")
    with open(path, "rb") as f, open(injected, "wb") as o:
        subprocess.run([PERF, "inject", "-i", "-", "-o", "-"], stdin=f, stdout=o,
                       check=True, timeout=120)
    r = perf_stdin(injected, "script", "-F", "tid,ip")
    assert r.returncode == 0, r.stderr
    assert addresses(r.stdout)[0][1] == pd.KERNEL_IPS + pd.USER_IPS


@pytest.mark.parametrize("args", [["script"], ["report", "--stdio"], ["script", "-D"]])
def test_pipe_larger_attr_with_set_extra_is_refused_clearly(tmp_path, args):
    path = newer_pipe(tmp_path, extra=b"\0\0\0\1")
    r = perf_stdin(path, *args)
    assert r.returncode != 0, r.stderr
    assert ("perf_event_attr fields this perf does not know (byte 139 of the file's "
            "152 byte attr is set") in r.stderr, r.stderr
    assert "DEFERRED CALLCHAIN" not in r.stdout and "0x401200" not in r.stdout


def test_pipe_attr_larger_than_its_record_is_refused(tmp_path):
    """An attr.size past the end of its PERF_RECORD_HEADER_ATTR: refused,
    not read past the record."""
    path = str(tmp_path / "bad.pipe")
    a = pd.attr(size=pd.ATTR_SIZE_612 + 16)[:pd.ATTR_SIZE_612]
    pd.write(path, [pd.comm(100, 100, "t0", 1)], attrs=[a], pipe=True)
    r = perf_stdin(path, "script")
    assert r.returncode != 0, r.stderr
    assert "PERF_RECORD_HEADER_ATTR" in r.stderr, r.stderr


# An other-endian pipe (a big-endian machine's 'perf record -o -'): perf
# byte-swaps each record before it checks it (session.c's swappers).

def be_attr_pipe(path, claimed, held):
    """A big-endian pipe stream: one PERF_RECORD_HEADER_ATTR whose
    perf_event_attr claims CLAIMED bytes (attr.size) but whose record
    holds only HELD bytes of it, and no ids."""
    a = struct.pack(">IIQQQQQ", pd.PERF_TYPE_SOFTWARE, claimed,
                    pd.PERF_COUNT_SW_CPU_CLOCK, 4000, pd.SAMPLE_TYPE, 0,
                    0).ljust(held, b"\0")[:held]
    with open(path, "wb") as f:
        f.write(struct.pack(">QQ", 0x32454c4946524550, 16) +
                struct.pack(">IHH", pd.RECORD_HEADER_ATTR, 0, 8 + held) + a)


# (attr.size claimed, bytes of the attr the record holds): a record cut
# short, an attr.size past the record by little, by much, and by so much
# that header.size - 8 - attr.size, as the int mem_bswap_64() takes, is
# 1.9 GB; and a record that does not even hold attr.type and attr.size.
BAD_BE_ATTRS = [(pd.ATTR_SIZE_612, 64), (pd.ATTR_SIZE_612, pd.ATTR_SIZE_612 - 8),
                (0xfff0, pd.ATTR_SIZE_612), (0x90000000, pd.ATTR_SIZE_612),
                (pd.ATTR_SIZE_612, 4)]


def refused_message(claimed, held):
    if held < 8:
        return (f"malformed PERF_RECORD_HEADER_ATTR: a {8 + held} byte record, "
                "shorter than the smallest perf_event_attr")
    return (f"malformed PERF_RECORD_HEADER_ATTR: a {claimed} byte "
            f"perf_event_attr in a {8 + held} byte record")


@pytest.mark.parametrize("claimed,held", BAD_BE_ATTRS)
def test_other_endian_pipe_attr_larger_than_its_record_is_refused(tmp_path, claimed, held):
    """perf_event__hdr_attr_swap() swapped attr.size bytes of the attr and
    then header.size - 8 - attr.size bytes of ids: with an attr.size past
    the record that length is negative, and when it is so negative that
    the int it is passed as turns positive, perf swaps memory until it
    crashes. The record must be refused with its sizes, as a native one
    is."""
    path = str(tmp_path / "be-attr.pipe")
    be_attr_pipe(path, claimed, held)
    for args in (["script"], ["report", "--stdio"], ["script", "-D"]):
        r = perf_stdin(path, *args)
        print(f"perf {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[-200:]}")
        assert r.returncode > 0, r.stderr
        assert refused_message(claimed, held) in r.stderr, r.stderr


# The same perf with AddressSanitizer ('make perf-asan', which 'make
# test-perf' builds and names in $VMTEST_PERF_ASAN): what the static perf
# does past a record's end is silent there, a report here.
PERF_ASAN = os.environ.get("VMTEST_PERF_ASAN") or \
    os.path.join(ROOT, "build", "out", "linux", "perf-asan", "perf")
if os.environ.get("VMTEST_PERF_ASAN") and not os.access(PERF_ASAN, os.X_OK):
    raise RuntimeError(f"VMTEST_PERF_ASAN={PERF_ASAN}: not an executable perf")


@pytest.mark.skipif(not os.access(PERF_ASAN, os.X_OK),
                    reason=f"no ASan perf ({PERF_ASAN}): run 'make test-perf'")
@pytest.mark.parametrize("claimed,held", BAD_BE_ATTRS)
def test_other_endian_pipe_attr_swap_stays_in_its_record(tmp_path, claimed, held):
    """Swapping the attr of the records above touches no byte past them."""
    path = str(tmp_path / "be-attr.pipe")
    be_attr_pipe(path, claimed, held)
    with open(path, "rb") as f:
        r = subprocess.run([PERF_ASAN, "script", "-D", "-i", "-"], stdin=f,
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PERF_PAGER": "cat", "HOME": "/nonexistent",
                                "ASAN_OPTIONS": "detect_leaks=0:exitcode=98"})
    report = [l for l in r.stderr.splitlines()
              if "AddressSanitizer" in l or l.lstrip().startswith("#")]
    print(f"ASan perf script -D: exit {r.returncode}, {len(report)} report lines")
    print("\n".join(report[:12]))
    assert r.returncode not in (98, -6, -11) and "ERROR: AddressSanitizer" not in r.stderr, \
        r.stderr[-3000:]
    assert r.returncode != 0 and refused_message(claimed, held) in r.stderr, r.stderr


def test_other_endian_pipe_attr_is_read(tmp_path):
    """The same big-endian attr, whole: read as the little-endian one is
    (the checks above do not refuse a good record)."""
    path = str(tmp_path / "be-attr.pipe")
    be_attr_pipe(path, pd.ATTR_SIZE_612, pd.ATTR_SIZE_612)
    r = perf_stdin(path, "script", "-D")
    print(f"perf script -D: exit {r.returncode}: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stderr
    assert "raw event: size 144 bytes" in r.stdout and "PERF_RECORD_ATTR" in r.stdout
    assert "malformed" not in r.stderr
