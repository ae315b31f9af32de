"""The series' perf tools on crafted perf.data files (ci/perfdata.py):
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

from ci import perfdata as pd

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


@pytest.mark.parametrize("kind", ["sample-nr", "short-header", "unaligned-unknown"])
@pytest.mark.parametrize("args", [["script"], ["report", "--stdio"], ["report", "-D"],
                                  ["report", "--stdio", "--no-children", "-g", "caller"]])
def test_malformed_records_fail_every_tool(tmp_path, kind, args):
    """perf script has always exited with an error on a record it cannot
    process; perf report printed the same error and exited 0, for every
    kind of malformed record, so a script could not tell a truncated
    report from a whole one.  Both fail now."""
    path, msg = pd.other_malformed(tmp_path, kind)
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


@pytest.mark.parametrize("first", [True, False])
def test_record_before_its_sample_is_kept(tmp_path, first):
    """A record that comes before its sample (stamped later on another
    CPU, or read unordered) merged with it through the thread's last
    record, except when it was the data's first deferred event: then
    nothing was kept, and the sample went without its user part."""
    path = str(tmp_path / "early.data")
    recs = [pd.comm(100, 100, "t0", 1), pd.comm(101, 101, "t1", 2)]
    if not first:
        recs += [pd.deferred_sample(101, 101, 3, pd.KERNEL_IPS, 0x1002),
                 pd.callchain_deferred(101, 101, 4, 0x1002, pd.USER_IPS)]
    recs += [pd.callchain_deferred(100, 100, 5, 0x1001, pd.USER_IPS),
             pd.deferred_sample(100, 100, 6, pd.KERNEL_IPS, 0x1001)]
    pd.write(path, recs)
    r = perf("script", "-i", path, "-F", "tid,ip")
    assert [ips for _, ips in addresses(r.stdout)] == \
        [pd.KERNEL_IPS + pd.USER_IPS] * (1 if first else 2), r.stdout


def test_older_entry_released_when_a_newer_record_comes(tmp_path):
    """Thread 100's first entry lost its record: its samples come out
    unmerged when the second entry's record arrives; thread 101's, whose
    record never comes, at the end; all in time order."""
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
    assert got == [("100", 0x1001), ("101", 0x1002), ("100", pd.USER_IPS[-1]),
                   ("100", pd.USER_IPS[-1])], r.stdout
    assert "2 samples without a deferred callchain" in r.stderr


def test_thread_without_records_holds_a_few_entries(tmp_path):
    """Thread 100 loses every record: when its fifth and sixth entries
    come, its oldest entries are released unmerged, the rest at the end;
    thread 101's sample merges when its record arrives; all in time
    order."""
    path = str(tmp_path / "norecords.data")
    recs = [pd.comm(100, 100, "t0", 1), pd.comm(101, 101, "t1", 1),
            pd.deferred_sample(101, 101, 2, pd.KERNEL_IPS, 0x1002)]
    recs += [pd.deferred_sample(100, 100, 10 + e, pd.KERNEL_IPS, (e + 1) << 12 | 1)
             for e in range(6)]
    recs += [pd.callchain_deferred(101, 101, 100, 0x1002, pd.USER_IPS)]
    pd.write(path, recs)
    r = perf("script", "-i", path, "-F", "tid,ip")
    got = [(b[0].split()[0], int(b[-1].split()[0], 16)) for b in blocks(r.stdout)]
    assert got == [("101", pd.USER_IPS[-1]), ("100", 0x1001), ("100", 0x2001),
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
    r = pd.run_stdin(PERF, path, *args)
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
               records=(), type=pd.PERF_TYPE_SOFTWARE):
    path = str(tmp_path / "newer.data")
    recs = [pd.comm(100, 100, "t0", 1),
            pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001),
            *records,
            pd.callchain_deferred(100, 100, 6, 0x1001, pd.USER_IPS)]
    pd.write(path, recs, attrs=[pd.attr(size=attr_size, extra=extra, type=type)],
             features=features)
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


# Past 7.2's config4: a field no perf this one knows of has.
UNKNOWN_EXTRA = b"\0" * 8 + b"\0\0\0\1"


def test_larger_attr_with_set_extra_is_refused_clearly(tmp_path):
    path = newer_file(tmp_path, extra=UNKNOWN_EXTRA)
    r = perf("script", "-i", path, check=False)
    assert r.returncode != 0
    assert ("perf_event_attr fields this perf does not know (byte 147 of the file's "
            "152 byte attr is set") in r.stderr, r.stderr


# 7.2's 144-byte attr: config4 extends the config of PMUs whose format uses
# it; a software, hardware or tracepoint event does not.
CONFIG4 = struct.pack("<Q", 0x1234)


@pytest.mark.parametrize("pipe", [False, True])
@pytest.mark.parametrize("size", [pd.ATTR_SIZE_612 + 8, pd.ATTR_SIZE_612 + 16])
def test_config4_of_a_generic_event_is_ignored(tmp_path, pipe, size):
    """7.2 writes 144-byte attrs; one whose event sets config4 was
    refused though a cpu-clock event does not use it."""
    if pipe:
        path = newer_pipe(tmp_path, attr_size=size, extra=CONFIG4)
        r = perf_stdin(path, "script", "-F", "tid,ip", "-v")
    else:
        path = newer_file(tmp_path, attr_size=size, extra=CONFIG4)
        r = perf("script", "-i", path, "-F", "tid,ip", "-v", check=False)
    assert r.returncode == 0, r.stderr
    assert addresses(r.stdout)[0][1] == pd.KERNEL_IPS + pd.USER_IPS
    assert "config4 0x1234 of a type 1 event, which does not use it, ignored" in r.stderr, \
        r.stderr


@pytest.mark.parametrize("pipe", [False, True])
@pytest.mark.parametrize("ptype", [9, 4])
def test_config4_of_a_pmu_event_is_refused_clearly(tmp_path, pipe, ptype):
    """A PMU's own type (9 here), or PERF_TYPE_RAW (4), the CPU PMU's raw
    config, whose format may use config4: 4 was taken for a generic type
    and its config4 ignored."""
    if pipe:
        path = str(tmp_path / "pmu.pipe")
        pd.write(path, [pd.comm(100, 100, "t0", 1)],
                 attrs=[pd.attr(size=pd.ATTR_SIZE_612 + 8, extra=CONFIG4, type=ptype)],
                 pipe=True)
        r = perf_stdin(path, "script")
    else:
        path = newer_file(tmp_path, attr_size=pd.ATTR_SIZE_612 + 8, extra=CONFIG4, type=ptype)
        r = perf("script", "-i", path, check=False)
    assert r.returncode != 0, r.stderr
    assert (f"An event of PMU type {ptype} sets perf_event_attr.config4 (0x1234), part of "
            "its config that this perf does not know") in r.stderr, r.stderr


def test_unknown_feature_bits_are_ignored(tmp_path):
    path = newer_file(tmp_path, features=(40, 100, 255))
    r = perf("script", "-i", path, "-F", "tid,ip", "-v")
    assert [int(x.split()[0], 16) for x in blocks(r.stdout)[0][1:]] == \
        pd.KERNEL_IPS + pd.USER_IPS
    assert "feature 40 of a newer perf" in r.stderr


@pytest.mark.parametrize("out", ["file", "pipe"])
@pytest.mark.parametrize("opts", [[], ["--convert-callchain"]])
def test_inject_of_a_file_with_newer_features(tmp_path, opts, out):
    """perf 7.2's files carry its features 32-34: perf inject, writing a
    header again, looked each one up past the end of its table of
    features and died of SIGSEGV, into a file or a pipe. They are left
    out, ours kept, and the stacks read as before."""
    path = newer_file(tmp_path, features={pd.HEADER_HOSTNAME: pd.perf_string("crafted"),
                                          **pd.FEATURES_72})
    dest = str(tmp_path / ("out.pipe" if out == "pipe" else "out.data"))
    r = subprocess.run([PERF, "inject", *opts, "-i", path, "-o", "-" if out == "pipe" else dest],
                       capture_output=True, timeout=120, env={**os.environ, "HOME": "/nonexistent"})
    assert r.returncode == 0, f"perf inject: exit {r.returncode}\n{r.stderr.decode()[-2000:]}"
    if out == "pipe":
        with open(dest, "wb") as f:
            f.write(r.stdout)
        got = perf_stdin(dest, "script", "-F", "tid,ip")
    else:
        got = perf("script", "-i", dest, "-F", "tid,ip")
    assert got.returncode == 0, got.stderr
    assert addresses(got.stdout)[0][1] == pd.KERNEL_IPS + pd.USER_IPS, got.stdout
    _, features, records = pd.read(dest)
    feats = set(features) | {struct.unpack_from("<Q", rec, 8)[0] for rec in records
                             if pd.record_type(rec) == pd.RECORD_HEADER_FEATURE}
    assert pd.HEADER_HOSTNAME in feats and max(feats) <= pd.HEADER_LAST_FEATURE_612, feats


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
    path = newer_pipe(tmp_path, extra=UNKNOWN_EXTRA)
    r = perf_stdin(path, *args)
    assert r.returncode != 0, r.stderr
    assert ("perf_event_attr fields this perf does not know (byte 147 of the file's "
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

def refused_message(claimed, held):
    if held < 8:
        return (f"malformed PERF_RECORD_HEADER_ATTR: a {8 + held} byte record, "
                "shorter than the smallest perf_event_attr")
    return (f"malformed PERF_RECORD_HEADER_ATTR: a {claimed} byte "
            f"perf_event_attr in a {8 + held} byte record")


@pytest.mark.parametrize("claimed,held", pd.BAD_BE_ATTRS)
def test_other_endian_pipe_attr_larger_than_its_record_is_refused(tmp_path, claimed, held):
    """perf_event__hdr_attr_swap() swapped attr.size bytes of the attr and
    then header.size - 8 - attr.size bytes of ids: with an attr.size past
    the record that length is negative, and when it is so negative that
    the int it is passed as turns positive, perf swaps memory until it
    crashes. The record must be refused with its sizes, as a native one
    is."""
    path = str(tmp_path / "be-attr.pipe")
    pd.be_attr_pipe(path, claimed, held)
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
@pytest.mark.parametrize("claimed,held", pd.BAD_BE_ATTRS)
def test_other_endian_pipe_attr_swap_stays_in_its_record(tmp_path, claimed, held):
    """Swapping the attr of the records above touches no byte past them."""
    path = str(tmp_path / "be-attr.pipe")
    pd.be_attr_pipe(path, claimed, held)
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
    pd.be_attr_pipe(path, pd.ATTR_SIZE_612, pd.ATTR_SIZE_612)
    r = perf_stdin(path, "script", "-D")
    print(f"perf script -D: exit {r.returncode}: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stderr
    assert "raw event: size 144 bytes" in r.stdout and "PERF_RECORD_ATTR" in r.stdout
    assert "malformed" not in r.stderr


def asan_perf_stdin(path, *args):
    """PERF_ASAN ARGS -i - with the stream at PATH on its stdin; an ASan
    report exits 98."""
    return pd.run_stdin(PERF_ASAN, path, *args)


# Types past session.c's table of swap functions (PERF_RECORD_HEADER_MAX
# is 84 in 6.12): 7.x's newer record types and anything a broken file holds.
@pytest.mark.skipif(not os.access(PERF_ASAN, os.X_OK),
                    reason=f"no ASan perf ({PERF_ASAN}): run 'make test-perf'")
@pytest.mark.parametrize("rtype", [84, 90, 100])
def test_other_endian_unknown_type_is_not_swapped(tmp_path, rtype):
    """event_swap() indexed its table of swap functions by the record
    type before anyone checked the type: a byte-swapped record of type 84
    or above made perf call a function pointer read from past the table.
    The record must be handled as the same record in a native stream is:
    skipped with a warning where this perf skips types it does not know
    (the series' perf), refused where it refuses them (6.12's)."""
    path = str(tmp_path / "be-unknown.pipe")
    pd.be_pipe_with_record(path, rtype)
    r = asan_perf_stdin(path, "script")
    print(f"ASan perf script: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    assert "ERROR: AddressSanitizer" not in r.stderr and r.returncode not in (98, -6, -11), \
        r.stderr[-3000:]
    native = str(tmp_path / "le-unknown.pipe")
    pd.pipe_with_record(native, rtype, endian="<")
    n = asan_perf_stdin(native, "script")
    print(f"the same, native: exit {n.returncode}: {n.stderr.strip()[-300:]}")
    assert r.returncode == n.returncode, r.stderr
    assert ("Skipping records of type" in r.stderr) == ("Skipping records of type" in n.stderr), \
        r.stderr


# The body sizes of an unaligned PERF_RECORD_SAMPLE, which
# perf_event__all64_swap() rounded up to whole u64s: a small one, and
# records larger than union perf_event (4 KiB and some), for which the
# pipe reader reallocates its buffer to the record's exact size.
@pytest.mark.skipif(not os.access(PERF_ASAN, os.X_OK),
                    reason=f"no ASan perf ({PERF_ASAN}): run 'make test-perf'")
@pytest.mark.parametrize("body", [12, 8188, 16380])
@pytest.mark.parametrize("args", [["script"], ["report", "--stdio"]])
def test_other_endian_unaligned_record_swap_stays_in_it(tmp_path, body, args):
    """A byte-swapped record whose size is not a multiple of 8 was
    swapped in whole u64s, the last one reaching up to 4 bytes past the
    record, which in pipe mode ends its heap buffer: no kernel and no
    perf writes one, so it must be refused, and nothing past it touched."""
    path = str(tmp_path / "be-unaligned.pipe")
    pd.be_pipe_with_record(path, pd.RECORD_SAMPLE, bytes(i % 251 + 1 for i in range(body)))
    r = asan_perf_stdin(path, *args)
    report = [l for l in r.stderr.splitlines()
              if "AddressSanitizer" in l or l.lstrip().startswith("#")]
    print(f"ASan perf {' '.join(args)}: exit {r.returncode}, {len(report)} report lines")
    print("\n".join(report[:8]))
    assert "ERROR: AddressSanitizer" not in r.stderr and r.returncode not in (98, -6, -11), \
        r.stderr[-3000:]
    assert r.returncode != 0, f"perf {' '.join(args)}: exit 0\n{r.stderr}"


# Events with different sample_id trailers in one file ('perf record -R'
# puts PERF_SAMPLE_CPU on some events only; hybrid machines): the record's
# trailer is the one of the event that wrote it.
ST_ID = pd.SAMPLE_TYPE | pd.SAMPLE_IDENTIFIER
ST_ID_CPU = ST_ID | pd.SAMPLE_CPU


def mixed_trailers(path, first, second, record_nr=None, record_ips=pd.USER_IPS):
    """Two events, ids 11 (sample type FIRST) and 22 (SECOND); event 22
    samples thread 100 and writes the deferred record, whose nr may claim
    RECORD_NR addresses."""
    # The COMM's trailer is FIRST's, not pd.SAMPLE_TYPE's.
    recs = [pd.comm(100, 100, "t0", 1, pd.trailer_of(first, 100, 100, 1, 11))]
    chain = [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS + [pd.CONTEXT_USER_DEFERRED, 0x1001]
    recs += [pd.sample_of(first, 100, 100, 5, chain, ident=11),
             pd.sample_of(second, 100, 100, 6, chain, ident=22),
             pd.callchain_deferred_of(second, 100, 100, 7, 0x1001, record_ips, ident=22,
                                      nr=record_nr)]
    pd.write(path, recs, attrs=[pd.attr(sample_type=first), pd.attr(sample_type=second)],
             ids=[[11], [22]])
    return 104 + 2 * 152 + 16 + sum(len(r) for r in recs[:3])


@pytest.mark.parametrize("first,second", [(ST_ID_CPU, ST_ID), (ST_ID, ST_ID_CPU)])
def test_record_trailer_is_its_own_events(tmp_path, first, second):
    """With the first event's trailer larger than the writing event's,
    a valid record was refused and the file failed as malformed."""
    path = str(tmp_path / "mixed.data")
    mixed_trailers(path, first, second)
    r = perf("script", "-i", path, "-F", "tid,ip", check=False)
    assert r.returncode == 0 and "malformed" not in r.stderr, r.stderr
    got = [ips for _, ips in addresses(r.stdout)]
    assert got == [pd.KERNEL_IPS + pd.USER_IPS] * 2, r.stdout


def test_record_short_for_its_own_trailer_is_refused(tmp_path):
    """The other way: with the first event's trailer smaller, a record
    whose nr runs into its own (larger) trailer passed the check, and its
    trailer was read as an address."""
    path = str(tmp_path / "mixed-short.data")
    off = mixed_trailers(path, ST_ID, ST_ID_CPU, record_nr=3, record_ips=pd.USER_IPS[:2])
    for args in (["script"], ["report", "--stdio"]):
        r = perf(*args, "-i", path, check=False)
        assert r.returncode != 0, f"perf {' '.join(args)}: exit 0\n{r.stdout[-2000:]}"
        assert f"{off:#x} [0x48]: malformed PERF_RECORD_CALLCHAIN_DEFERRED" in r.stderr, \
            r.stderr


# perf inject -b / -B: a DSO that only deferred user callchains hit (with
# fp,defer the samples' own ips are mostly in the kernel) is hit too.
TRUE_BIN = "/usr/bin/true"


@pytest.mark.skipif(not os.path.exists(TRUE_BIN), reason=f"no {TRUE_BIN}")
@pytest.mark.parametrize("opt", ["-b", "-B"])
def test_inject_build_ids_of_deferred_callchains(tmp_path, opt):
    """The user addresses are in /usr/bin/true only in the record: -b
    injected no build-id for it and -B dropped its mmap, so its frames no
    longer resolved."""
    path, out = str(tmp_path / "bid.data"), str(tmp_path / "injected.data")
    pd.write(path, [pd.comm(100, 100, "t0", 1),
                    pd.mmap(100, 100, 0x400000, 0x10000, 0, TRUE_BIN, 2),
                    pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001),
                    pd.callchain_deferred(100, 100, 6, 0x1001, pd.USER_IPS)])
    perf("inject", opt, "-i", path, "-o", out)
    if opt == "-b":
        # perf buildid-list lists the build-ids the data carries.
        lines = perf("buildid-list", "-i", out).stdout.splitlines()
        lines = [l for l in lines if re.fullmatch(r"[0-9a-f]{40} " + TRUE_BIN, l)]
    else:
        # -B: an MMAP2 with the build-id in place of each hit MMAP
        dump = perf("script", "-D", "-i", out).stdout
        lines = [l for l in dump.splitlines() if "PERF_RECORD_MMAP2" in l and TRUE_BIN in l]
    print("\n".join(lines))
    assert lines, f"no build-id of {TRUE_BIN} after perf inject {opt}"
    # The merged stack still ends in the user addresses.
    r = perf("script", "-i", out, "-F", "tid,ip")
    assert [ips for _, ips in addresses(r.stdout)] == [pd.KERNEL_IPS + pd.USER_IPS], r.stdout


@pytest.mark.skipif(not os.path.exists(TRUE_BIN), reason=f"no {TRUE_BIN}")
def test_inject_build_ids_from_a_pipe_into_a_file(tmp_path):
    """'perf record -o - | perf inject -b -o perf.data': the header's
    attrs, written after the features for a pipe's data, were written over
    them (the build-ids among them)."""
    path, out = str(tmp_path / "bid.pipe"), str(tmp_path / "injected.data")
    pd.write(path, [pd.comm(100, 100, "t0", 1),
                    pd.mmap(100, 100, 0x400000, 0x10000, 0, TRUE_BIN, 2),
                    pd.sample(100, 100, 5, [pd.CONTEXT_USER, 0x401000], misc=pd.MISC_USER)],
             attrs=[pd.attr(flags=pd.ATTR_SAMPLE_ID_ALL)], pipe=True)
    with open(path, "rb") as f:
        subprocess.run([PERF, "inject", "-b", "-i", "-", "-o", out], stdin=f, check=True,
                       timeout=120)
    lines = perf("buildid-list", "-i", out).stdout.splitlines()
    print("\n".join(lines))
    assert any(re.fullmatch(r"[0-9a-f]{40} " + TRUE_BIN, l) for l in lines), lines
    assert perf("report", "--stat", "-i", out).returncode == 0


# A program whose .plt.got has an entry (gcc's PIE links __cxa_finalize,
# and atoi here, through it), kept as a debuginfo file only.
PLT_GOT_PROGRAM = r"""
#include <stdlib.h>
int (*volatile keep)(const char *) = atoi;
int main(int argc, char **argv) { return atoi(argv[0]) + (keep != 0); }
"""


def test_symbols_from_a_debuginfo_file_alone(tmp_path):
    """A DSO whose binary is not found but whose debuginfo file is (a
    recording read elsewhere; Debian's -dbg packages): its symbols come
    from the debuginfo file, whose .plt.got has a header and no contents
    (SHT_NOBITS). Synthesizing the PLT symbols read the entries through a
    NULL buffer: perf script died with SIGSEGV on the first sample."""
    src, prog = tmp_path / "pg.c", str(tmp_path / "pg")
    src.write_text(PLT_GOT_PROGRAM)
    subprocess.run(["gcc", "-O1", "-g", "-o", prog, str(src)], check=True)
    sections = subprocess.run(["readelf", "-SW", prog], capture_output=True,
                              text=True, check=True).stdout
    assert ".plt.got" in sections, "gcc made no .plt.got: the test needs one"
    notes = subprocess.run(["readelf", "-n", prog], capture_output=True,
                           text=True, check=True).stdout
    build_id = re.search(r"Build ID: ([0-9a-f]{40})", notes).group(1)
    debug = tmp_path / "symfs" / "usr" / "lib" / "debug" / ".build-id" / build_id[:2]
    debug.mkdir(parents=True)
    subprocess.run(["objcopy", "--only-keep-debug", prog,
                    str(debug / f"{build_id[2:]}.debug")], check=True)
    main = int(subprocess.run(["nm", prog], capture_output=True, text=True,
                              check=True).stdout.split(" T main")[0].split()[-1], 16)
    base, gone = 0x555555554000, "/nonexistent/pg"
    path = str(tmp_path / "pg.data")
    pd.write(path, [pd.comm(100, 100, "pg", 1),
                    pd.mmap(100, 100, base, 0x4000, 0, gone, 2),
                    pd.sample(100, 100, 5, [pd.CONTEXT_USER, base + main],
                              ip=base + main, misc=pd.MISC_USER)],
             attrs=[pd.attr(flags=pd.ATTR_SAMPLE_ID_ALL)],
             features={pd.HEADER_BUILD_ID: pd.build_id_feature(bytes.fromhex(build_id), gone)})
    r = perf("script", "--symfs", str(tmp_path / "symfs"), "-F", "ip,sym",
             "-i", path, check=False)
    assert r.returncode == 0, f"perf script: exit {r.returncode}\n{r.stderr}"
    # (the sample is printed; which symbol perf names from a debuginfo file
    # alone is another matter)
    assert re.search(rf"\b{base + main:x}\b", r.stdout), r.stdout


# Time order: a held sample is delivered in its place, not when its record
# comes (perf sched timehist, perf lock, perf script's deltas and perf
# record --timestamp-boundary depend on it).

def test_held_samples_keep_time_order(tmp_path):
    path = str(tmp_path / "order.data")
    pd.write(path, [
        pd.comm(100, 100, "t0", 1), pd.comm(101, 101, "t1", 1),
        pd.deferred_sample(100, 100, 10000, pd.KERNEL_IPS, 0x1001),
        pd.sample(101, 101, 11000, [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS),
        pd.deferred_sample(101, 101, 12000, pd.KERNEL_IPS, 0x1002),
        pd.sample(101, 101, 13000, [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS),
        pd.callchain_deferred(101, 101, 14000, 0x1002, pd.USER_IPS),
        pd.callchain_deferred(100, 100, 15000, 0x1001, pd.USER_IPS),
    ])
    r = perf("script", "-i", path, "-F", "tid,time,ip")
    times = [float(b[0].split()[1].rstrip(":")) for b in blocks(r.stdout)]
    print(r.stdout)
    assert times == sorted(times) and len(times) == 4, r.stdout
    got = [ips for _, ips in addresses(r.stdout)]
    assert got == [pd.KERNEL_IPS + pd.USER_IPS, pd.KERNEL_IPS,
                   pd.KERNEL_IPS + pd.USER_IPS, pd.KERNEL_IPS], r.stdout
    # perf script --deltatime: no wrapped (negative) delta.
    r = perf("script", "-i", path, "-F", "tid,time", "--deltatime")
    deltas = [float(l.split()[1].rstrip(":")) for l in r.stdout.splitlines() if l.strip()]
    assert all(0 <= d < 1 for d in deltas), r.stdout


def test_entry_held_samples_are_bounded(tmp_path):
    """A thread sampled for long in one kernel entry (a vCPU thread in
    KVM_RUN) does not have all its samples held: past 65536 queued
    events the oldest go unmerged, the later ones merge."""
    path = str(tmp_path / "long-entry.data")
    n = 70000
    recs = [pd.comm(100, 100, "t0", 1)]
    recs += [pd.deferred_sample(100, 100, 10 + i, pd.KERNEL_IPS, 0x1001) for i in range(n)]
    recs.append(pd.callchain_deferred(100, 100, 10 + n, 0x1001, pd.USER_IPS))
    pd.write(path, recs)
    r = perf("report", "--stat", "-i", path)
    m = re.search(r"^(\d+) samples without their deferred user callchain$", r.stdout, re.M)
    print(m and m.group(0))
    assert m and 0 < int(m.group(1)) < n, r.stdout[-2000:]


def no_tid_file(path, threads):
    """THREADS threads, each with one deferred sample, then the records,
    without sample_id_all: the records carry no thread."""
    a = pd.attr(flags=pd.ATTR_DEFER_CALLCHAIN | pd.ATTR_DEFER_OUTPUT)
    recs = []
    for t in range(threads):
        recs.append(pd.deferred_sample(1000 + t, 1000 + t, 10 + t, pd.KERNEL_IPS, 0x100000 + t))
    for t in range(threads):
        body = struct.pack("<QQ3Q", 0x100000 + t, 3, *pd.USER_IPS)
        recs.append(pd._record(pd.RECORD_CALLCHAIN_DEFERRED, pd.MISC_USER, body))
    pd.write(path, recs, attrs=[a])


def test_records_without_tid_are_not_quadratic(tmp_path):
    """Each record without a tid looked at every thread held so far:
    60000 threads took 17.7 s (100000: 130 s), 0.04 s with the cookie
    index (the static perf; 0.1 s under ASan), measured 2026-11-26.  The
    bound leaves a slow machine a hundred times that."""
    import time
    path = str(tmp_path / "notid.data")
    no_tid_file(path, 60000)
    t0 = time.monotonic()
    r = perf("report", "--stat", "-i", path)
    took = time.monotonic() - t0
    print(f"perf report --stat, 60000 threads: {took:.2f} s")
    assert "samples without their deferred user callchain" not in r.stdout, r.stdout[-1000:]
    assert took < 5, f"{took:.1f} s"


def test_report_stat_and_tasks_keep_no_merge(tmp_path):
    """perf report --stat and --tasks set their tool up again and undid
    --no-merge-callchains."""
    path = str(tmp_path / "lost.data")
    pd.write(path, [pd.comm(100, 100, "t0", 1),
                    pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001)])
    r = perf("report", "--stat", "-i", path)
    assert "1 samples without their deferred user callchain" in r.stdout, r.stdout
    r = perf("report", "--stat", "--no-merge-callchains", "-i", path)
    assert "without their deferred user callchain" not in r.stdout, r.stdout
    r = perf("report", "--tasks", "--no-merge-callchains", "-i", path)
    assert "samples without" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_script_records_follow_field_selection(basic):
    """-F sw: (no fields for software events) hides cpu-clock's samples:
    its deferred records must go with them."""
    r = perf("script", "-i", basic, "--no-merge-callchains", "-F", "sw:", check=False)
    assert "DEFERRED CALLCHAIN" not in r.stdout, r.stdout[:2000]


def perfconfig_home(tmp_path, text):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".perfconfig").write_text(text)
    return str(home)


@pytest.mark.parametrize("tool", ["top", "trace"])
def test_defer_warning_only_with_call_graphs(tmp_path, tool):
    """A perfconfig record-mode=fp,defer made perf top and perf trace
    warn that they do not defer even when no call graph was asked for."""
    home = perfconfig_home(tmp_path, "[call-graph]\n\trecord-mode = fp,defer\n")
    # Options that stop both right after the check: no events are opened.
    args = {"top": ["--stitch-lbr", "--stdio"], "trace": ["-i", str(tmp_path / "none.data")]}[tool]
    env = {**os.environ, "PERF_PAGER": "cat", "HOME": home}
    for g, warned in (([], False), (["-g"] if tool == "top" else ["--call-graph", "fp,defer"], True)):
        r = subprocess.run([PERF, tool, *g, *args], capture_output=True, text=True,
                           env=env, timeout=60)
        if "is not a perf-command" in r.stderr:
            pytest.skip(f"perf {tool} not built (it needs libtraceevent)")
        print(f"perf {tool} {' '.join(g + args)}: exit {r.returncode}\n{r.stderr[-500:]}")
        assert ("does not support deferred user callchains" in r.stderr) == warned, r.stderr


@pytest.mark.parametrize("term,deferred", [("max-stack=8", True), ("call-graph=fp", True),
                                           ("call-graph=lbr", False)])
def test_per_event_term_keeps_defer(tmp_path, term, deferred):
    """A max-stack= or call-graph=fp term made perf record drop defer for
    its event, silently; call-graph=lbr drops it (fp only) and says so.
    The attr is printed before it is opened (the host kernel may lack
    the feature: what perf asked for is what counts here)."""
    r = subprocess.run([PERF, "record", "-vv", "-o", str(tmp_path / "t.data"),
                        "-e", f"cpu-clock/{term}/", "--call-graph", "fp,defer", "--", "true"],
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "HOME": "/nonexistent"})
    first = r.stderr.split("sys_perf_event_open")[0]
    assert "perf_event_attr:" in first, r.stderr[-2000:]
    assert ("defer_callchain" in first) == deferred, first
    if not deferred:
        assert "user callchains not deferred (fp only)" in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("term", ["call-graph=fp", "max-stack=8"])
def test_term_deferring_by_the_perfconfig_has_the_records_written(tmp_path, term):
    """record-mode = fp,defer in the perfconfig and no -g: an event's own
    call-graph=fp or max-stack= term deferred its user callchains, but
    defer_output followed -g alone, so no event received the records and
    every sample lost its user stack. The first event, a dummy, is the
    tracking one (on any host: a hybrid one's perf record adds a dummy
    only when the first event is not one); the first attr printed, its
    own, must ask for the records (the deferring event's attr comes
    after an open that a host kernel without the feature refuses, and
    test_per_event_term_keeps_defer checks it)."""
    home = perfconfig_home(tmp_path, "[call-graph]\n\trecord-mode = fp,defer\n")
    r = subprocess.run([PERF, "record", "-vv", "-o", str(tmp_path / "t.data"),
                        "-e", "dummy", "-e", f"cpu-clock/{term}/", "--", "true"],
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "HOME": home})
    first = r.stderr.split("sys_perf_event_open")[0]
    assert "perf_event_attr:" in first, r.stderr[-2000:]
    assert "config                           0x9" in first, first  # the dummy
    assert "defer_output" in first, first


# Compressed data ('perf record -z'): 7.x writes PERF_RECORD_COMPRESSED2,
# older perfs PERF_RECORD_COMPRESSED; the perf here is built with zstd.

def compressed_recording(path, v2=True, pipe=False, split=2):
    """The basic two-thread recording, its records compressed in SPLIT
    records (a record can end in one and its successor start in the next
    only at record boundaries here: perf compresses whole records)."""
    plain = str(path) + ".plain"
    pd.deferred_recording(plain, threads=2, entries=2)
    pd.deferred_recording(path, threads=2, entries=2, compress=split, v2=v2, pipe=pipe)
    return plain


@pytest.mark.parametrize("pipe", [False, True])
@pytest.mark.parametrize("v2", [True, False])
def test_compressed_records_read(tmp_path, v2, pipe):
    """7.2's 'perf record -z' file: 0 samples ("Skipping records of type
    83"); the same stacks as the uncompressed recording now."""
    path = str(tmp_path / ("rec.pipe" if pipe else "rec.data"))
    plain = compressed_recording(path, v2=v2, pipe=pipe)
    want = perf("script", "-i", plain, "-F", "tid,ip")
    r = perf_stdin(path, "script", "-F", "tid,ip") if pipe else \
        perf("script", "-i", path, "-F", "tid,ip", check=False)
    assert r.returncode == 0, r.stderr
    assert "Skipping" not in r.stderr, r.stderr
    got = addresses(r.stdout)
    print(f"{len(got)} samples read, {len(addresses(want.stdout))} in the plain file")
    assert got == addresses(want.stdout) and len(got) == 8, r.stdout
    r = perf_stdin(path, "report", "--stat") if pipe else perf("report", "--stat", "-i", path)
    assert re.search(r"COMPRESSED%s events:\s+2\b" % ("2" if v2 else ""), r.stdout), r.stdout


def test_report_stat_and_tasks_read_a_compressed_pipe(tmp_path):
    """'perf record -z -o -' as 6.12's perf writes it (PERF_RECORD_COMPRESSED,
    no record of the series): perf report --stat and --tasks set their
    tool up again and dropped the pipe's features, HEADER_COMPRESSED
    among them, so they could not decompress the first record."""
    body = [pd.sample(100 + th, 100 + th, 10 + 2 * i + th, [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS)
            for i in range(3) for th in range(2)]
    recs = [pd.comm(100 + th, 100 + th, "t%d" % th, 1 + th) for th in range(2)]
    recs += [pd.compressed(body[:3], v2=False), pd.compressed(body[3:], v2=False)]
    feats = [pd.feature_record(pd.HEADER_COMPRESSED, pd.COMPRESSED_FEATURE),
             pd.feature_record(pd.HEADER_LAST_FEATURE_612)]
    path = str(tmp_path / "z.pipe")
    pd.write(path, feats + recs, pipe=True)
    r = perf_stdin(path, "report", "--stat")
    print(f"perf report --stat: exit {r.returncode}: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0 and "decompress" not in r.stderr, r.stderr
    assert re.search(r"SAMPLE events:\s+6\b", r.stdout), r.stdout
    assert re.search(r"COMPRESSED events:\s+2\b", r.stdout), r.stdout
    r = perf_stdin(path, "report", "--tasks")
    print(f"perf report --tasks: exit {r.returncode}: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0 and "decompress" not in r.stderr, r.stderr
    # "<pid> <tid> <ppid> | <comm>" a thread
    tids = {int(l.split()[1]) for l in r.stdout.splitlines()
            if re.match(r"\s*\d+\s+\d+\s+-?\d+\s+\|\s*t\d$", l)}
    assert tids == {100, 101}, r.stdout


@pytest.mark.parametrize("data_size", [1 << 40, 9])
def test_compressed2_data_size_past_its_record_is_refused(tmp_path, data_size):
    path = str(tmp_path / "bad.data")
    rec = pd.compressed([pd.comm(100, 100, "t0", 1)])
    real = struct.unpack_from("<Q", rec, 8)[0]
    rec = rec[:8] + struct.pack("<Q", real + len(rec) if data_size == 9 else data_size) + rec[16:]
    pd.write(path, [rec], features={pd.HEADER_COMPRESSED: pd.COMPRESSED_FEATURE})
    r = perf("script", "-i", path, check=False)
    assert r.returncode != 0, r.stderr
    assert "malformed PERF_RECORD_COMPRESSED2" in r.stderr, r.stderr


def test_pipe_with_newer_features_is_read(tmp_path):
    """7.2's pipe: features 32-34 (CPU_DOMAIN_INFO, E_MACHINE, CLN_SIZE)
    and its end marker 35 as PERF_RECORD_HEADER_FEATURE records; perf
    report took 32 for the end marker and failed on 33."""
    path = str(tmp_path / "newer-features.pipe")
    feats = [pd.feature_record(f, d) for f, d in pd.FEATURES_72.items()]
    feats += [pd.feature_record(pd.HEADER_LAST_FEATURE_72)]
    pd.write(path, feats + [pd.comm(100, 100, "t0", 1),
                            pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001),
                            pd.callchain_deferred(100, 100, 6, 0x1001, pd.USER_IPS)],
             pipe=True)
    for args in (["script", "-F", "tid,ip"], ["report", "--stdio", "--no-children"],
                 ["report", "--stat"]):
        r = perf_stdin(path, *args)
        print(f"perf {' '.join(args)}: exit {r.returncode} {r.stderr.strip()[-300:]}")
        assert r.returncode == 0, r.stderr
    r = perf_stdin(path, "script", "-F", "tid,ip")
    assert addresses(r.stdout)[0][1] == pd.KERNEL_IPS + pd.USER_IPS, r.stdout


# Upstream perf 7.2's text for the same data (SPEC §6): scripts parse it.

def test_unmerged_cookie_frame_as_upstream(basic):
    """The cookie that ends an unmerged sample: '(cookie)' where the
    symbol goes, as upstream prints it (was '[unknown]')."""
    r = perf("script", "-i", basic, "-F", "tid,ip,sym,dso", "--no-merge-callchains")
    samples = [b for b in blocks(r.stdout) if "DEFERRED CALLCHAIN" not in b[0]]
    assert samples and all(re.fullmatch(r"\s*[12]00[12] \(cookie\) \(\[unknown\]\)", b[-1])
                           for b in samples), r.stdout[:2000]
    assert "(cookie)" not in "".join(l for b in samples for l in b[1:-1])


def test_raw_dump_sample_lines_as_upstream(basic):
    """-D: upstream labels every context marker and ends a deferred
    sample's chain with '...... (deferred)'."""
    out = perf("script", "-D", "-i", basic).stdout
    chain = re.search(r"\.\.\. FP chain: nr:5\n((?:\.\.\.\.\. .*\n)+)(.*)\n", out)
    assert chain, out[:3000]
    assert chain.group(1).splitlines() == [
        ".....  0: ffffffffffffff80 (PERF_CONTEXT_KERNEL)",
        ".....  1: ffffffff81000100",
        ".....  2: ffffffff81000200",
        ".....  3: fffffffffffffd80 (PERF_CONTEXT_USER_DEFERRED)",
        ".....  4: 0000000000001001"], chain.group(0)
    assert chain.group(2) == "...... (deferred)", chain.group(0)


@pytest.mark.parametrize("order", ["callee", "caller"])
def test_report_has_no_branch_per_cookie(basic, order):
    """perf report --no-merge-callchains: the cookies that end the
    unmerged samples (one per kernel entry) made a call graph branch
    each; the samples of a thread share their kernel stack."""
    r = perf("report", "--stdio", "--no-children", "--no-merge-callchains",
             "-g", order, "-i", basic)
    graph = "\n".join(l for l in r.stdout.splitlines() if not l.startswith("#"))
    print(graph)
    assert not re.search(r"0x[12]00[12]\b", graph), graph
    assert "0xffffffff81000200" in graph


@pytest.mark.parametrize("args", [["script"], ["script", "--no-merge-callchains"],
                                  ["report", "--stdio"]])
def test_a_file_cut_short_is_read_as_far_as_it_goes(tmp_path, args):
    """A perf.data cut in its data (a full disk, a copy stopped): the
    header still gives the whole data's size. perf reads the events that
    are there and never touches the mapped pages past the end of the
    file (SIGBUS: the 6.12 perf at any cut, 7.2's at half of them; the
    series' perf shell test callchain_defer_hostile met it in a guest)."""
    whole = str(tmp_path / "whole.data")
    pd.deferred_recording(whole, threads=4, entries=100)
    data = open(whole, "rb").read()
    start = pd.FILE_HEADER_SIZE + len(pd.attr()) + 16
    cut = str(tmp_path / "cut.data")
    # Every page boundary inside the data, and a few cuts inside records.
    ends = list(range(4096, len(data), 4096)) + [start + 1, len(data) // 3 + 5,
                                                  len(data) * 2 // 3]
    for end in ends:
        with open(cut, "wb") as f:
            f.write(data[:end])
        r = perf(*args, "-i", cut, check=False)
        assert "cut short" in r.stderr, (end, r.stderr[-500:])
