"""perf inject --convert-callchain on crafted recordings (ci/perfdata.py):
a recording with deferred user callchains written as one with classic
callchains, each sample's user stack after PERF_CONTEXT_USER as if the
kernel had walked it where the sample was taken, for the tools that know
nothing of deferred callchains.

What needs our perf alone never skips where it exists ('make test-perf'
names it, as for test_perf_tools.py): the bytes written, the stacks our
perf prints of them, the refusals, the ASan perf. The readers nobody here
wrote, the unpatched perf of Debian bookworm (6.1) and trixie (6.12),
hotspot's perfparser (bookworm's hotspot) and upstream perf 7.2, must
print for every sample the stack our perf prints for the original; the
Debian ones are fetched at test time (ci/perfreaders.py, kept under
build/readers/) and skip only when that fetch cannot be made, upstream
perf only when 'make perf-upstream' did not build it.
"""
import functools
import os
import re
import struct
import subprocess
import tempfile

import pytest

from ci import perfdata as pd
from ci import perfreaders
from test_perf_tools import PERF, PERF_ASAN, ROOT, blocks, perf

pytestmark = pytest.mark.skipif(not os.access(PERF, os.X_OK),
                                reason=f"no perf built ({PERF}): run 'make test-perf'")

PERF_UPSTREAM = os.environ.get("VMTEST_PERF_UPSTREAM") or \
    os.path.join(ROOT, "build", "out", "perf-upstream", "perf", "perf")
if os.environ.get("VMTEST_PERF_UPSTREAM") and not os.access(PERF_UPSTREAM, os.X_OK):
    raise RuntimeError(f"VMTEST_PERF_UPSTREAM={PERF_UPSTREAM}: not an executable perf")

ENV = {**os.environ, "PERF_PAGER": "cat", "HOME": "/nonexistent",
       "ASAN_OPTIONS": "detect_leaks=0:exitcode=98"}

# Three threads, three kernel entries each, two samples per entry, every
# fourth record lost, rounds every two entries: 18 samples, the 4 of the
# lost entries without their user part.
RECORDING = dict(threads=3, entries=3, samples_per_entry=2, lose_every=4, round_every=2)
SAMPLES, UNMERGED = 18, 4
# What 'perf record' writes too: perfparser looks for HOSTNAME or CMDLINE;
# EVENT_DESC holds the attrs again, defer bits and all.
FEATURES = {pd.HEADER_HOSTNAME: pd.perf_string("crafted"),
            pd.HEADER_CMDLINE: pd.cmdline_feature(["perf", "record", "-g"]),
            pd.HEADER_EVENT_DESC: pd.event_desc([pd.attr()], ["cpu-clock"], [[]])}
KINDS = {"file": {}, "pipe": {"pipe": True},
         "file-z": {"compress": 3}, "pipe-z": {"pipe": True, "compress": 3}}
MERGED_CHAIN = [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS + [pd.CONTEXT_USER] + pd.USER_IPS
KERNEL_CHAIN = [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS


def recording(tmp_path, kind):
    path = str(tmp_path / f"{kind}.data")
    pd.deferred_recording(path, features=FEATURES, **RECORDING, **KINDS[kind])
    return path


def is_pipe(path):
    with open(path, "rb") as f:
        return struct.unpack("<8sQ", f.read(16))[1] == 16


def run(cmd, path, timeout=120):
    """CMD reading PATH: a pipe stream on its stdin ('-i -'), a file by
    name; the perf or perfparser option is the caller's."""
    # SIGPIPE ignored (Python's own disposition, kept): perf 6.1's report
    # writes to an addr2line that exited (it cannot read a real
    # recording's file, which is the guest's) and would die of it
    with open(path, "rb") as f:
        r = subprocess.run(cmd, stdin=f if is_pipe(path) else subprocess.DEVNULL,
                           capture_output=True, env=ENV, timeout=timeout,
                           restore_signals=False)
    assert r.returncode >= 0, f"{cmd}: killed by signal {-r.returncode}\n{r.stderr[-2000:]}"
    return r


def input_arg(path):
    return "-" if is_pipe(path) else path


def convert(src, out, perf_bin=PERF, *opts):
    """perf inject --convert-callchain of SRC into OUT, a file or, named
    *.pipe, a pipe stream (perf's stdout)."""
    cmd = [perf_bin, "inject", "--convert-callchain", *opts, "-i", input_arg(src)]
    if out.endswith(".pipe"):
        r = run(cmd + ["-o", "-"], src)
        with open(out, "wb") as f:
            f.write(r.stdout)
    else:
        r = run(cmd + ["-o", out], src)
    r.stderr = r.stderr.decode(errors="replace")
    return r


@pytest.fixture(params=["file", "pipe"])
def out_kind(request):
    return request.param


def converted(tmp_path, kind, out_kind):
    src = recording(tmp_path, kind)
    out = str(tmp_path / ("converted.pipe" if out_kind == "pipe" else "converted.data"))
    r = convert(src, out)
    assert r.returncode == 0, r.stderr
    return src, out, r


# --- what the output holds ---------------------------------------------

def expected_chains(tmp_path):
    """(tid, time) -> the callchain of each sample of the recording, as
    recorded in place: merged where its entry's record is in the data."""
    plain = str(tmp_path / "plain.data")
    pd.deferred_recording(plain, **RECORDING)
    _, _, records = pd.read(plain)
    cookies = {pd.parse_callchain_deferred(r)[:2] for r in records
               if pd.record_type(r) == pd.RECORD_CALLCHAIN_DEFERRED}
    want = {}
    for r in records:
        if pd.record_type(r) == pd.RECORD_SAMPLE:
            s = pd.parse_sample(pd.SAMPLE_TYPE, r)
            tid, cookie = s["tid"][1], s["callchain"][-1]
            want[(tid, s["time"][0])] = MERGED_CHAIN if (tid, cookie) in cookies \
                else KERNEL_CHAIN
    return want


def event_descs(features, records):
    """The events of every HEADER_EVENT_DESC: a file's feature, a pipe's
    feature records."""
    descs = [features[pd.HEADER_EVENT_DESC]] if pd.HEADER_EVENT_DESC in features else []
    descs += [r[16:] for r in records if pd.record_type(r) == pd.RECORD_HEADER_FEATURE
              and struct.unpack_from("<Q", r, 8)[0] == pd.HEADER_EVENT_DESC]
    return [e for d in descs for e in pd.event_desc_attrs(d)]


@pytest.mark.parametrize("kind", KINDS)
def test_converted_samples_hold_the_user_stack(tmp_path, kind, out_kind):
    """Each sample written with the callchain it would have had if the
    kernel had walked the user stack in place (kernel part,
    PERF_CONTEXT_USER, the user addresses), or with its kernel part alone
    where its record was lost, counted on stderr; in time order, every
    other field as recorded; no deferred record, no compressed record,
    no defer bit in any attr, and attrs no larger than they need be (a
    perf older than the attr refuses a file)."""
    src, out, r = converted(tmp_path, kind, out_kind)
    assert f"{UNMERGED} samples without a deferred callchain" in r.stderr, r.stderr
    attrs, features, records = pd.read(out)
    types = {pd.record_type(rec) for rec in records}
    assert pd.RECORD_CALLCHAIN_DEFERRED not in types, types
    assert not types & {pd.RECORD_COMPRESSED, pd.RECORD_COMPRESSED2}, types
    assert pd.HEADER_COMPRESSED not in features
    for a, _ in attrs:
        assert not pd.attr_flags(a) & (pd.ATTR_DEFER_CALLCHAIN | pd.ATTR_DEFER_OUTPUT), \
            hex(pd.attr_flags(a))
    if out_kind == "file":
        # Nothing past the first 64 bytes is set in the crafted attr.
        assert [len(a) for a, _ in attrs] == [64], [len(a) for a, _ in attrs]
        # A pipe's features go to the header, where tools look for them.
        assert pd.RECORD_HEADER_FEATURE not in types, types
        assert features.get(pd.HEADER_HOSTNAME) == FEATURES[pd.HEADER_HOSTNAME]
    # The rounds stay: a reader need not hold everything to the end.
    order = [pd.record_type(rec) for rec in records]
    assert pd.RECORD_FINISHED_ROUND in order[order.index(pd.RECORD_SAMPLE):], order
    descs = event_descs(features, records)
    assert descs and {name for _, name in descs} == {"cpu-clock"}, descs
    assert not any(pd.attr_flags(a) & (pd.ATTR_DEFER_CALLCHAIN | pd.ATTR_DEFER_OUTPUT)
                   for a, _ in descs), descs

    samples = [pd.parse_sample(pd.SAMPLE_TYPE, rec) for rec in records
               if pd.record_type(rec) == pd.RECORD_SAMPLE]
    got = {(s["tid"][1], s["time"][0]): list(s["callchain"]) for s in samples}
    assert len(samples) == SAMPLES and got == expected_chains(tmp_path), got
    assert [s["time"] for s in samples] == sorted(s["time"] for s in samples)
    assert all(s["ip"] == (pd.KERNEL_IPS[0],) and s["tid"][0] == s["tid"][1]
               and s["period"] == (1000000,) for s in samples), samples


def test_output_is_in_time_order(tmp_path, out_kind):
    """Two CPU buffers written one after the other in a round, as perf
    record writes them: the samples of both threads interleave in time,
    and come out in time order, each merged with its own record."""
    src = str(tmp_path / "buffers.data")
    cpu0 = [pd.deferred_sample(100, 100, t, pd.KERNEL_IPS, 0x1001) for t in (10, 12)]
    cpu1 = [pd.deferred_sample(101, 101, t, pd.KERNEL_IPS, 0x1002) for t in (11, 13)]
    pd.write(src, [pd.comm(100, 100, "t0", 1), pd.comm(101, 101, "t1", 2),
                   *cpu0, pd.callchain_deferred(100, 100, 14, 0x1001, pd.USER_IPS),
                   *cpu1, pd.callchain_deferred(101, 101, 15, 0x1002, pd.USER_IPS),
                   pd.finished_round()])
    out = str(tmp_path / ("out.pipe" if out_kind == "pipe" else "out.data"))
    assert convert(src, out).returncode == 0
    samples = [pd.parse_sample(pd.SAMPLE_TYPE, rec) for rec in pd.read(out)[2]
               if pd.record_type(rec) == pd.RECORD_SAMPLE]
    assert [(s["time"][0], s["tid"][1], list(s["callchain"])) for s in samples] == \
        [(10, 100, MERGED_CHAIN), (11, 101, MERGED_CHAIN), (12, 100, MERGED_CHAIN),
         (13, 101, MERGED_CHAIN)], samples


def test_recorded_build_ids_are_kept(tmp_path):
    """The build-ids of the recording (its HEADER_BUILD_ID) hold for the
    converted one: perf inject alone writes only those of the DSOs it saw
    hit, none here."""
    src, out = str(tmp_path / "bid.data"), str(tmp_path / "out.data")
    bid = bytes(range(1, 21))
    pd.deferred_recording(src, features={pd.HEADER_BUILD_ID: pd.build_id_feature(bid, "/bin/app")})
    assert convert(src, out).returncode == 0
    assert perf("buildid-list", "-i", out).stdout.split() == [bid.hex(), "/bin/app"]


def test_other_sample_fields_are_kept_byte_for_byte(tmp_path, out_kind):
    """Two events, their samples with an identifier, id, cpu and raw data
    after the callchain: the converted sample is the recorded one, its
    callchain replaced; the dummy event, which has no callchain, converts
    too."""
    st = pd.SAMPLE_TYPE | pd.SAMPLE_IDENTIFIER | pd.SAMPLE_ID | pd.SAMPLE_CPU | pd.SAMPLE_RAW
    chain = [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS + [pd.CONTEXT_USER_DEFERRED, 0x1001]
    samples = [pd.sample_of(st, 100, 100, 5 + i, chain, ident=11, cpu=i,
                            raw=bytes(range(i, i + 12))) for i in range(3)]
    src = str(tmp_path / "two-events.data")
    pd.write(src, [pd.comm(100, 100, "t0", 1, pd.trailer_of(st, 100, 100, 1, 11)),
                   *samples,
                   pd.callchain_deferred_of(st, 100, 100, 9, 0x1001, pd.USER_IPS, ident=11)],
             attrs=[pd.attr(sample_type=st),
                    pd.attr(sample_type=st & ~pd.SAMPLE_CALLCHAIN,
                            config=pd.PERF_COUNT_SW_DUMMY, flags=pd.ATTR_SAMPLE_ID_ALL)],
             ids=[[11], [22]])
    out = str(tmp_path / ("out.pipe" if out_kind == "pipe" else "out.data"))
    r = convert(src, out)
    assert r.returncode == 0, r.stderr
    got = [rec for rec in pd.read(out)[2] if pd.record_type(rec) == pd.RECORD_SAMPLE]
    at = pd.parse_sample(st, samples[0])["callchain_at"]
    want = [s[:at] + struct.pack("<Q%dQ" % len(MERGED_CHAIN), len(MERGED_CHAIN), *MERGED_CHAIN)
            + s[at + 8 * (1 + len(chain)):] for s in samples]
    want = [struct.pack("<IHH", pd.RECORD_SAMPLE, pd.MISC_KERNEL, len(w)) + w[8:] for w in want]
    assert got == want


def test_without_the_option_records_pass_through(tmp_path):
    """perf inject alone still writes what was recorded (the defer bits
    and the deferred records), which only a reader that merges reads."""
    src = recording(tmp_path, "file")
    out = str(tmp_path / "injected.data")
    perf("inject", "-i", src, "-o", out)
    attrs, _, records = pd.read(out)
    assert pd.attr_flags(attrs[0][0]) & pd.ATTR_DEFER_CALLCHAIN
    assert sum(pd.record_type(r) == pd.RECORD_CALLCHAIN_DEFERRED for r in records) == 7


# --- what it refuses ---------------------------------------------------

def has_dwarf_unwinder():
    out = perf("version", "--build-options").stdout
    return bool(re.search(r"dwarf-unwind: \[ on", out))


@pytest.mark.parametrize("pipe", [False, True])
def test_dwarf_recording_needs_an_unwinder(tmp_path, pipe):
    """A --call-graph dwarf recording: unwound where this perf has an
    unwinder and the data is a file, as upstream perf 7.2 does; refused
    in a pipe; refused, saying why, by a perf built without libdw and
    libunwind (the guest's static perf)."""
    st = pd.SAMPLE_TYPE | pd.SAMPLE_REGS_USER | pd.SAMPLE_STACK_USER
    src = str(tmp_path / ("dwarf.pipe" if pipe else "dwarf.data"))
    pd.write(src, [pd.comm(100, 100, "t0", 1)],
             attrs=[pd.attr(sample_type=st, flags=pd.ATTR_SAMPLE_ID_ALL)], pipe=pipe)
    r = convert(src, str(tmp_path / "out.data"))
    print(r.stderr)
    if not has_dwarf_unwinder():
        assert r.returncode != 0
        assert re.search(r"event cpu-clock\S* has DWARF callchains, and this perf was "
                         r"built without a DWARF unwinder", r.stderr), r.stderr
    elif pipe:
        assert r.returncode != 0 and "unwound in a file only" in r.stderr, r.stderr
    else:
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("pipe", [False, True])
def test_recording_without_deferred_callchains_is_refused(tmp_path, pipe):
    src = str(tmp_path / ("classic.pipe" if pipe else "classic.data"))
    pd.write(src, [pd.comm(100, 100, "t0", 1),
                   pd.sample(100, 100, 5, KERNEL_CHAIN)],
             attrs=[pd.attr(flags=pd.ATTR_SAMPLE_ID_ALL)], pipe=pipe)
    r = convert(src, str(tmp_path / "out.data"))
    assert r.returncode != 0
    assert re.search(r"event cpu-clock\S* has neither deferred \(--call-graph fp,defer\) "
                     r"nor DWARF \(--call-graph dwarf\) user callchains", r.stderr), r.stderr


# Two events told apart by their sample identifier: 11 defers, 22 has no
# user callchain to convert.
ST_ID = pd.SAMPLE_TYPE | pd.SAMPLE_IDENTIFIER
NO_USER_CHAIN = {
    # a tracepoint's call-graph=no beside --call-graph fp,defer
    "no callchain": pd.attr(sample_type=ST_ID & ~pd.SAMPLE_CALLCHAIN,
                            flags=pd.ATTR_SAMPLE_ID_ALL),
    # --kernel-callchains: exclude_callchain_user
    "kernel callchain": pd.attr(sample_type=ST_ID, flags=pd.ATTR_SAMPLE_ID_ALL |
                                pd.ATTR_EXCLUDE_CALLCHAIN_USER),
}


@pytest.mark.parametrize("pipe", [False, True])
@pytest.mark.parametrize("second", NO_USER_CHAIN)
def test_events_without_a_user_callchain_pass_through(tmp_path, second, pipe):
    """An event with no user callchain beside a deferring one made the
    whole recording refused as having "neither deferred nor DWARF user
    callchains"; its samples have nothing to convert and go through byte
    for byte, the deferring event's are converted."""
    attr = NO_USER_CHAIN[second]
    st = struct.unpack_from("<Q", attr, 24)[0]
    deferred = [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS + [pd.CONTEXT_USER_DEFERRED, 0x1001]
    other = pd.sample_of(st, 100, 100, 6, KERNEL_CHAIN, ident=22)
    recs = [pd.comm(100, 100, "t0", 1, pd.trailer_of(ST_ID, 100, 100, 1, 11)),
            pd.sample_of(ST_ID, 100, 100, 5, deferred, ident=11), other,
            pd.callchain_deferred_of(ST_ID, 100, 100, 7, 0x1001, pd.USER_IPS, ident=11)]
    src = str(tmp_path / ("two.pipe" if pipe else "two.data"))
    pd.write(src, recs, attrs=[pd.attr(sample_type=ST_ID), attr], ids=[[11], [22]], pipe=pipe)
    out = str(tmp_path / "out.data")
    r = convert(src, out)
    assert r.returncode == 0, r.stderr
    samples = [rec for rec in pd.read(out)[2] if pd.record_type(rec) == pd.RECORD_SAMPLE]
    assert len(samples) == 2, samples
    by_id = {struct.unpack_from("<Q", rec, 8)[0]: rec for rec in samples}
    assert by_id[22] == other
    assert list(pd.parse_sample(ST_ID, by_id[11])["callchain"]) == MERGED_CHAIN
    assert NOTHING_CONVERTED not in r.stderr, r.stderr


NOTHING_CONVERTED = "no event has deferred or DWARF user callchains"


@pytest.mark.parametrize("pipe", [False, True])
def test_recording_without_user_callchains_is_written_as_recorded_and_said(tmp_path, pipe):
    """With no event that has user callchains (--kernel-callchains
    alone), the conversion is the recording as it was: said, so that a
    wrong file does not pass for a converted one (before, silent)."""
    sample = pd.sample_of(pd.SAMPLE_TYPE, 100, 100, 5, KERNEL_CHAIN)
    src = str(tmp_path / ("kernel.pipe" if pipe else "kernel.data"))
    pd.write(src, [pd.comm(100, 100, "t0", 1), sample], pipe=pipe,
             attrs=[pd.attr(flags=pd.ATTR_SAMPLE_ID_ALL | pd.ATTR_EXCLUDE_CALLCHAIN_USER)])
    out = str(tmp_path / "out.data")
    r = convert(src, out)
    assert r.returncode == 0, r.stderr
    assert NOTHING_CONVERTED in r.stderr, r.stderr
    assert [rec for rec in pd.read(out)[2] if pd.record_type(rec) == pd.RECORD_SAMPLE] == [sample]


@pytest.mark.parametrize("name", ["ours", "perf-6.1", "perf-6.12", "perf-7.2"])
def test_newer_perfs_features_are_not_piped_on(tmp_path, name, request):
    """perf 7.2's pipe holds three features this perf does not know and
    its end marker. Converted pipe to pipe, they went through, and perf
    report 6.1 and 6.12 stopped at the second of them ("wrong feature
    ID: 33"), with no sample shown and exit status 0. Each reader prints
    the stacks our perf prints of the original, and the output ends its
    features with this perf's marker, none past it."""
    cmd = reader_command(name, request)
    src = str(tmp_path / "newer.pipe")
    pd.deferred_recording(src, features={**FEATURES, **pd.FEATURES_72}, pipe=True,
                          end=pd.HEADER_LAST_FEATURE_72, **RECORDING)
    out = str(tmp_path / "converted.pipe")
    r = convert(src, out)
    assert r.returncode == 0, r.stderr
    assert stacks(name, cmd, out, tmp_path) == stacks("ours", [PERF], src, tmp_path)
    feats = [struct.unpack_from("<Q", rec, 8)[0] for rec in pd.read(out)[2]
             if pd.record_type(rec) == pd.RECORD_HEADER_FEATURE]
    assert feats and feats[-1] == max(feats) == pd.HEADER_LAST_FEATURE_612, feats


@pytest.mark.parametrize("opt", ["-b", "-B", "--buildid-all", "--mmap2-buildid-all",
                                 "-s", "-j"])
def test_options_writing_samples_their_own_way_are_refused(tmp_path, opt):
    r = convert(recording(tmp_path, "file"), str(tmp_path / "out.data"), PERF, opt)
    assert r.returncode != 0
    assert "--convert-callchain cannot be combined with" in r.stderr, r.stderr


def test_sample_too_large_for_a_record_is_refused(tmp_path):
    """A merged callchain past a record's 64 KiB: refused, not cut."""
    kernel = [0xffffffff81000000 + 8 * i for i in range(32)]
    src = str(tmp_path / "large.data")
    pd.write(src, [pd.comm(100, 100, "t0", 1),
                   pd.deferred_sample(100, 100, 5, kernel, 0x1001),
                   pd.callchain_deferred(100, 100, 6, 0x1001,
                                         [0x400000 + i for i in range(8180)])])
    r = convert(src, str(tmp_path / "out.data"))
    assert r.returncode != 0
    assert "a sample with 8214 callchain entries is too large for a record" in r.stderr, \
        r.stderr


# --- the same under AddressSanitizer -------------------------------------

needs_asan = pytest.mark.skipif(not os.access(PERF_ASAN, os.X_OK),
                                reason=f"no ASan perf ({PERF_ASAN}): run 'make test-perf'")


def asan_clean(r):
    assert "ERROR: AddressSanitizer" not in r.stderr and r.returncode not in (98, -6, -11), \
        r.stderr[-3000:]


def data_records(path):
    return [r for r in pd.read(path)[2] if pd.record_type(r) != pd.RECORD_HEADER_FEATURE]


@needs_asan
@pytest.mark.parametrize("kind", KINDS)
def test_asan_converts_the_same(tmp_path, kind, out_kind):
    src, out, _ = converted(tmp_path, kind, out_kind)
    asan_out = os.path.join(os.path.dirname(out), "asan" + os.path.splitext(out)[1])
    r = convert(src, asan_out, PERF_ASAN)
    asan_clean(r)
    assert r.returncode == 0, r.stderr
    # Not the features: CMDLINE names each perf's path.
    assert data_records(asan_out) == data_records(out)


@needs_asan
@pytest.mark.parametrize("pipe", [False, True])
@pytest.mark.parametrize("size,nr", [(20, None), (32, None), (None, 4), (None, 1 << 60)])
def test_asan_malformed_record_refused(tmp_path, pipe, size, nr):
    """A record cut short or claiming more addresses than it holds: the
    conversion stops at it, with its offset, touching nothing past it."""
    rec = pd.callchain_deferred(100, 100, 6, 0x1001, pd.USER_IPS, size=size)
    if nr is not None:
        rec = rec[:16] + nr.to_bytes(8, "little") + rec[24:]
    src = str(tmp_path / ("hostile.pipe" if pipe else "hostile.data"))
    pd.write(src, [pd.comm(100, 100, "t0", 1),
                   pd.deferred_sample(100, 100, 5, pd.KERNEL_IPS, 0x1001), rec], pipe=pipe)
    r = convert(src, str(tmp_path / "out.data"), PERF_ASAN)
    asan_clean(r)
    assert r.returncode != 0 and "malformed PERF_RECORD_CALLCHAIN_DEFERRED" in r.stderr, \
        r.stderr


# --- the readers -------------------------------------------------------

@pytest.fixture(scope="session")
def fetched():
    """{suite: directory} of the Debian readers, fetched once a run."""
    out = {}
    for suite in perfreaders.SUITES:
        try:
            out[suite] = perfreaders.fetch(suite)
        except perfreaders.FetchError as e:
            out[suite] = e
        else:
            print(f"{suite}: {perfreaders.versions(suite, out[suite])}")
    return out


def reader_command(name, request):
    """The command of a reader, on its own libraries (the Debian ones
    fetched once a run through request's "fetched" fixture)."""
    if name == "ours":
        return [PERF]
    if name == "perf-7.2":
        if not os.access(PERF_UPSTREAM, os.X_OK):
            pytest.skip(f"no upstream perf ({PERF_UPSTREAM}): run 'make perf-upstream'")
        return [PERF_UPSTREAM]
    suite, _, program = perfreaders.READERS[name]
    dest = request.getfixturevalue("fetched")[suite]
    if isinstance(dest, Exception):
        pytest.skip(f"{name} cannot be fetched: {dest}")
    missing = perfreaders.missing_libraries(dest, program)
    assert not missing, f"{name} lacks {missing}: add their packages to ci/perfreaders.py"
    return perfreaders.command(dest, program)


READERS = ["ours", "perf-6.1", "perf-6.12", "perf-7.2", "perfparser"]


@pytest.fixture(params=READERS)
def reader(request):
    """(name, command) of a reader."""
    return request.param, reader_command(request.param, request)


def ns(text):
    """'0.000001002' seconds, as perf prints times with --ns"""
    sec, frac = text.split(".")
    return int(sec) * 10**9 + int(frac.ljust(9, "0"))


@functools.lru_cache(maxsize=None)
def empty_symfs():
    """An empty directory for --symfs: what a reader prints must not
    depend on this host's files (a real recording's libc is the
    guest's, and the host's libc6-dbg debuginfo of it crashed every
    unpatched perf: fix "perf symbols: Skip the .plt.got of a debuginfo
    file")."""
    return tempfile.mkdtemp(prefix="empty-symfs-")


def script_stacks(cmd, path):
    """(tid, time, addresses) of each sample, in the order perf script
    prints them; a frame whose symbol is "(cookie)", the one our perf
    prints where an unmerged sample's user part would be, is left out."""
    r = run(cmd + ["script", "--ns", "-F", "tid,time,ip,sym", "--symfs", empty_symfs(),
                   "-i", input_arg(path)], path)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    out = []
    for b in blocks(r.stdout.decode()):
        tid, time = b[0].split()[:2]
        ips = [int(line.split()[0], 16) for line in b[1:] if "(cookie)" not in line]
        out.append((int(tid), ns(time.rstrip(":")), ips))
    return out


def report_stacks(cmd, path, tmp_path):
    """(time, addresses) of each sample as perf report shows it: one
    entry per sample (sorted by time at a nanosecond quantum), its
    callchain flat; no kernel symbols (the host's kallsyms could name the
    crafted addresses)."""
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text("")
    r = run(cmd + ["report", "--stdio", "--no-children", "--ns", "--sort", "time",
                   "--time-quantum", "1ns", "-g", "flat,0,callee,address",
                   "--kallsyms", str(kallsyms), "--symfs", str(tmp_path),
                   "-i", input_arg(path)], path)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    out = []
    for line in r.stdout.decode().splitlines():
        m = re.match(r"\s+[\d.]+%\s+(\d+\.\d+)\s*$", line)
        if m:
            out.append((ns(m.group(1)), []))
        elif re.match(r"\s+0x[0-9a-f]+\s*$", line) and out:
            out[-1][1].append(int(line, 16))
    return sorted(out)


def perfparser_stacks(cmd, path, tmp_path):
    """(tid, time, addresses) of each sample perfparser writes, in time
    order; kernel symbols from a crafted kallsyms (it reads the host's
    otherwise), no system root."""
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text("".join(f"{ip:x} T crafted_{i}\n"
                                for i, ip in enumerate(pd.KERNEL_IPS)))
    opts = ["--kallsyms", str(kallsyms), "--sysroot", str(tmp_path)]
    r = run(cmd + opts + ([] if is_pipe(path) else ["--input", path]), path)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    samples, errors = perfreaders.perfparser_samples(r.stdout)
    # A real recording's binaries are the guest's, not on this host: the
    # stacks are its addresses, which perfparser keeps all the same
    errors = [e for e in errors if not e.startswith("Could not find ELF file for ")]
    assert not errors, errors
    return sorted(samples, key=lambda s: s[1])


KERNEL_START = 1 << 63  # x86-64's kernel addresses, the crafted ones too


def without_perfparsers_guess(stack):
    """perfparser (perfunwind.cpp's resolveCallchain) puts the sample's
    own ip before the first user frame when they differ, taking it for a
    frame the kernel skipped: for a sample taken in the kernel that is
    its first kernel address again."""
    u = next((i for i, ip in enumerate(stack) if ip < KERNEL_START), len(stack))
    if 1 < u < len(stack) and stack[u - 1] == stack[0]:
        return stack[:u - 1] + stack[u:]
    return stack


def stacks(name, cmd, path, tmp_path):
    """Each reader's view: perf's through script and report, perfparser's."""
    if name == "perfparser":
        return {"perfparser": [(tid, t, without_perfparsers_guess(s))
                               for tid, t, s in perfparser_stacks(cmd, path, tmp_path)]}
    return {"script": script_stacks(cmd, path), "report": report_stacks(cmd, path, tmp_path)}


def original_is_not_read(name, cmd, src, converted, tmp_path):
    """A reader that knows nothing of deferred callchains (not ours, not
    perf 7.2) fails on the original SRC or prints other stacks from it
    than CONVERTED, its view of the conversion."""
    if name not in ("perf-6.1", "perf-6.12", "perfparser"):
        return
    try:
        before = stacks(name, cmd, src, tmp_path)
    except AssertionError as e:  # the reader fails on it
        print(f"{name} on the original: {str(e)[:300]}")
    else:
        assert before != converted, f"{name} reads the user stacks of the original"


@pytest.mark.parametrize("kind", KINDS)
def test_readers_print_the_stacks_of_the_original(tmp_path, kind, out_kind, reader):
    """Every sample of the converted data, read by each reader, has the
    stack our perf prints for it in the original (14 with their user
    part, 4 without); and a reader that knows nothing of deferred
    callchains does not print them from the original (the check sees a
    missing user part). Upstream perf 7.2 knows them: the conversion is
    its to read, the original too."""
    name, cmd = reader
    src, out, _ = converted(tmp_path, kind, out_kind)
    want = script_stacks([PERF], src)
    assert len(want) == SAMPLES
    assert sum(s[2] == pd.KERNEL_IPS + pd.USER_IPS for s in want) == SAMPLES - UNMERGED
    assert sum(s[2] == pd.KERNEL_IPS for s in want) == UNMERGED
    got = stacks(name, cmd, out, tmp_path)
    for how, view in got.items():
        print(f"{name} {how}: {len(view)} samples")
        if how == "report":
            assert view == sorted((t, s) for _, t, s in want), view
        elif how == "perfparser":
            assert view == sorted(want, key=lambda s: s[1]), view
        else:
            assert view == want, view
    original_is_not_read(name, cmd, src, got, tmp_path)


# --- a real recording from the guest -----------------------------------
#
# tests/data/guest-recording (make guest-recording): gzip built with SFrame
# by sid's binutils, run in the x86-64 guest on the series' kernel under
# perf record --call-graph fp,defer (make realstacks): deferred.data, every
# write and read it made through the LD_PRELOAD shim sampled, and
# shim.log, glibc's backtrace() of each of those calls, the truth; and
# sampled.data, the same workload on cpu-clock. *converted.data are our
# perf inject --convert-callchain of them. The guest's static perf has no
# libtraceevent, so deferred.data has no trace data for its tracepoints,
# which Debian's perf 6.1 and 6.12 and perfparser require of a recording
# with tracepoint events ("broken or missing trace data"): they are held
# to sampled.data's stacks, ours and perf 7.2 to the truth too.

GUEST = os.path.join(ROOT, "tests", "data", "guest-recording")
GUEST_DEFERRED = os.path.join(GUEST, "deferred.data")
GUEST_CONVERTED = os.path.join(GUEST, "converted.data")
GUEST_SAMPLED = os.path.join(GUEST, "sampled.data")
GUEST_SAMPLED_CONVERTED = os.path.join(GUEST, "sampled-converted.data")
# The fields make realstacks' runner has perf script print (its judge's
# input, ci/judge/realstacks/perfscript.py).
REALSTACKS_FIELDS = "tid,time,event,ip,sym,uregs"


def guest_truth():
    from ci.judge.realstacks import shimlog
    with open(os.path.join(GUEST, "shim.log")) as f:
        return shimlog.parse(f.read())


def judged_against_the_truth(cmd, path, mode):
    """ci.judge.realstacks' verdict on what CMD's perf script prints of
    PATH, against the kept shim log."""
    from ci.judge.realstacks import compare, perfscript
    opts = ["--no-merge-callchains"] if mode == "deferred" else []
    r = run(cmd + ["script", "-i", path, "-F", REALSTACKS_FIELDS, "--ns", *opts], path)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    samples, records, probs = perfscript.parse(r.stdout.decode(errors="replace"))
    assert not probs, probs
    res = compare.compare(guest_truth(), samples, records, mode)
    assert not res.problems, res.problems
    return res


def test_guest_recording_is_what_a_deferred_guest_run_records():
    """The kept original holds deferred callchains, and our perf's stacks
    from it equal glibc's backtrace() of every traced call through main
    (what make realstacks measured in the guest): the truth the readers
    below are held to."""
    _, _, records = pd.read(GUEST_DEFERRED)
    types = [pd.record_type(r) for r in records]
    assert types.count(pd.RECORD_CALLCHAIN_DEFERRED) > 0, set(types)
    res = judged_against_the_truth([PERF], GUEST_DEFERRED, "deferred")
    print(f"{res.entries} calls, {res.count_through_main()} through main")
    assert res.entries >= 10 and res.count_through_main() == res.entries, res.outcomes()


@pytest.mark.parametrize("src, kept", [(GUEST_DEFERRED, GUEST_CONVERTED),
                                       (GUEST_SAMPLED, GUEST_SAMPLED_CONVERTED)],
                         ids=["tracepoints", "cpu-clock"])
def test_guest_recording_converts_as_kept(tmp_path, src, kept):
    """The tree's perf converts each original today as the kept
    conversion says (the same stacks, every sample merged), and the kept
    conversion holds no deferred record and no defer bit."""
    out = str(tmp_path / "converted.data")
    r = convert(src, out)
    assert r.returncode == 0, r.stderr
    assert "without a deferred callchain" not in r.stderr, r.stderr
    assert script_stacks([PERF], out) == script_stacks([PERF], kept)
    attrs, _, records = pd.read(kept)
    assert pd.RECORD_CALLCHAIN_DEFERRED not in {pd.record_type(r) for r in records}
    assert not any(pd.attr_flags(a) & (pd.ATTR_DEFER_CALLCHAIN | pd.ATTR_DEFER_OUTPUT)
                   for a, _ in attrs)


@pytest.mark.parametrize("name", ["ours", "perf-7.2"])
def test_readers_of_the_guest_conversion_print_glibcs_stacks(name, request):
    """Every perf that reads the converted tracepoint recording prints,
    for every traced call, the stack glibc's backtrace() took (through
    main), as if the kernel had walked it in place."""
    cmd = reader_command(name, request)
    res = judged_against_the_truth(cmd, GUEST_CONVERTED, "in place")
    print(f"{name}: {res.entries} calls, {res.count_through_main()} through main")
    assert res.entries >= 10 and res.count_through_main() == res.entries, res.outcomes()


def test_the_sampled_guest_recording_has_user_stacks():
    """sampled.data is a real deferred recording worth reading: samples
    in user space and in the kernel with user stacks three frames deep or
    more (gzip's, walked with SFrame; busybox's shell around it has
    neither frame pointers nor SFrame: one frame)."""
    want = script_stacks([PERF], GUEST_SAMPLED)
    deep = [s for s in want if len([ip for ip in s[2] if ip < KERNEL_START]) >= 3]
    assert len(deep) >= 20, f"{len(deep)} of {len(want)} samples"
    assert any(s[2][0] >= KERNEL_START for s in deep), "no sample in the kernel"
    assert any(s[2][0] < KERNEL_START for s in deep), "no sample in user space"


def mappings(path):
    """pid -> [(start, end, pgoff)] of the recording's PERF_RECORD_MMAP2s,
    newest first, then those of its parents (PERF_RECORD_FORK: a child
    maps what its parent had)."""
    own, parent = {}, {}
    for r in pd.read(path)[2]:
        if pd.record_type(r) == pd.RECORD_MMAP2:
            pid, _, start, length, pgoff = struct.unpack_from("<IIQQQ", r, 8)
            own.setdefault(pid, []).insert(0, (start, start + length, pgoff))
        elif pd.record_type(r) == pd.RECORD_FORK:
            pid, ppid = struct.unpack_from("<II", r, 8)
            if pid != ppid:
                parent[pid] = ppid
    maps = {}
    for pid in set(own) | set(parent):
        maps[pid], p, seen = [], pid, set()
        while p is not None and p not in seen:
            seen.add(p)
            maps[pid] += own.get(p, [])
            p = parent.get(p)
    return maps


def perf61s_view_of(view, want, maps):
    """Whether perf 6.1's script stacks are WANT's: the same samples and
    frames, a user frame either its address or, as 6.1 prints a frame
    of a file it has no symbol for, its offset in the file (MAPS: its
    thread's mappings; the programs here have one thread each)."""
    def offset(tid, ip):
        for start, end, pgoff in maps.get(tid, []):
            if start <= ip < end:
                return ip - start + pgoff
        return None
    return len(view) == len(want) and all(
        (tid, t) == (wtid, wt) and len(s) == len(ws) and
        all(a == b or a == offset(tid, b) for a, b in zip(s, ws))
        for (tid, t, s), (wtid, wt, ws) in zip(view, want))


def perfparsers_view_of(view, want):
    """Whether perfparser's stacks are WANT's: the same samples, frames and
    kernel addresses; a user address may differ by one page-aligned
    offset per thread. perfparser keeps one location per address of a
    file and writes it with the address of the first process that mapped
    the file there: a library another process mapped elsewhere (ASLR)
    comes out at the first one's address."""
    deltas = {}
    for (tid, t, s), (wtid, wt, ws) in zip(view, want):
        if (tid, t) != (wtid, wt) or len(s) != len(ws):
            return False
        for a, b in zip(s, ws):
            if a == b:
                continue
            if max(a, b) >= KERNEL_START or (a - b) % 4096 or \
                    deltas.setdefault(tid, a - b) != a - b:
                return False
    print(f"perfparser: per-thread offsets {({k: hex(v) for k, v in deltas.items()})}")
    return len(view) == len(want)


@pytest.mark.parametrize("name", READERS)
def test_readers_print_the_sampled_guest_recordings_stacks(tmp_path, name, request):
    """Every reader prints, for every sample of the converted cpu-clock
    recording, the stack our perf prints for the original; Debian's
    unpatched perf and perfparser, given the original, do not."""
    cmd = reader_command(name, request)
    want = script_stacks([PERF], GUEST_SAMPLED)
    got = stacks(name, cmd, GUEST_SAMPLED_CONVERTED, tmp_path)
    for how, view in got.items():
        print(f"{name} {how}: {len(view)} samples")
        if how == "report":
            # perf report shows no frame at address 0, which an exiting
            # task's in-place walk of a program without frame pointers
            # can end with (perf script shows it)
            assert view == sorted((t, [ip for ip in s if ip]) for _, t, s in want), view[:3]
        elif how == "perfparser":
            assert perfparsers_view_of(view, sorted(want, key=lambda s: s[1])), view[:3]
        elif name == "perf-6.1":
            assert perf61s_view_of(view, want, mappings(GUEST_SAMPLED)), view[:3]
        else:
            assert view == want, view[:3]
    original_is_not_read(name, cmd, GUEST_SAMPLED, got, tmp_path)
