"""Crafted perf.data files for the host tests of the series' perf tools.

A perf.data file (tools/perf/util/header.c) is a perf_file_header, the
event attributes (each followed by the section of its sample ids), the data
section with the records, and one section table entry per feature bit set
in the header followed by the features' contents.  This module writes small
files of that format from Python, so the tests can feed perf what a real
recording holds (samples with deferred callchains, their
PERF_RECORD_CALLCHAIN_DEFERRED records) and what a hostile or newer one
holds (records cut short, a larger perf_event_attr, feature bits this perf
does not know) without a kernel that records them.
"""
import os
import struct
import subprocess

MAGIC = b"PERFILE2"
FILE_HEADER_SIZE = 104
ATTR_SIZE_612 = 136  # PERF_ATTR_SIZE_VER8, sizeof(perf_event_attr) in 6.12

PERF_TYPE_SOFTWARE = 1
PERF_COUNT_SW_CPU_CLOCK = 0
PERF_COUNT_SW_DUMMY = 9

SAMPLE_IP = 1 << 0
SAMPLE_TID = 1 << 1
SAMPLE_TIME = 1 << 2
SAMPLE_CALLCHAIN = 1 << 5
SAMPLE_ID = 1 << 6
SAMPLE_CPU = 1 << 7
SAMPLE_PERIOD = 1 << 8
SAMPLE_RAW = 1 << 10
SAMPLE_REGS_USER = 1 << 12
SAMPLE_STACK_USER = 1 << 13
SAMPLE_IDENTIFIER = 1 << 16

RECORD_MMAP = 1
RECORD_MMAP2 = 10
RECORD_EXIT = 4
RECORD_COMM = 3
RECORD_FORK = 7
RECORD_SAMPLE = 9
RECORD_CALLCHAIN_DEFERRED = 22
RECORD_HEADER_ATTR = 64
RECORD_FINISHED_ROUND = 68
RECORD_HEADER_FEATURE = 80
RECORD_COMPRESSED = 81
RECORD_COMPRESSED2 = 83  # 7.x's, 8-byte aligned

HEADER_BUILD_ID = 2
HEADER_HOSTNAME = 3
HEADER_CMDLINE = 11
HEADER_EVENT_DESC = 12
HEADER_COMPRESSED = 27
HEADER_LAST_FEATURE_612 = 32
# 7.2's features past 6.12's: CPU_DOMAIN_INFO, E_MACHINE, CLN_SIZE
HEADER_LAST_FEATURE_72 = 35
# ... with contents as 7.2's perf record writes them
FEATURES_72 = {32: struct.pack("<QQ", 1, 0), 33: struct.pack("<II", 62, 0),
               34: struct.pack("<Q", 64)}

MISC_KERNEL = 1
MISC_USER = 2

CONTEXT_KERNEL = (1 << 64) - 128
CONTEXT_USER = (1 << 64) - 512
CONTEXT_USER_DEFERRED = (1 << 64) - 640

# attr flag bits (the bitfield word after read_format)
ATTR_DISABLED = 1 << 0
ATTR_FREQ = 1 << 10
ATTR_SAMPLE_ID_ALL = 1 << 18
ATTR_EXCLUDE_CALLCHAIN_USER = 1 << 22
ATTR_DEFER_CALLCHAIN = 1 << 38
ATTR_DEFER_OUTPUT = 1 << 39

SAMPLE_TYPE = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_PERIOD | SAMPLE_CALLCHAIN


def attr(size=ATTR_SIZE_612, flags=ATTR_SAMPLE_ID_ALL | ATTR_DEFER_CALLCHAIN |
         ATTR_DEFER_OUTPUT, sample_type=SAMPLE_TYPE, extra=b"", type=PERF_TYPE_SOFTWARE,
         config=PERF_COUNT_SW_CPU_CLOCK):
    """A cpu-clock perf_event_attr of SIZE bytes (or an event of another
    TYPE or CONFIG); EXTRA fills the bytes past 6.12's end (zero by
    default): 7.x's config4 first."""
    head = struct.pack("<IIQQQQQ", type, size,
                       config, 4000, sample_type, 0, flags)
    body = head.ljust(ATTR_SIZE_612, b"\0")
    tail = extra.ljust(size - ATTR_SIZE_612, b"\0") if size > ATTR_SIZE_612 else b""
    return (body + tail)[:size]


def _record(rtype, misc, body):
    size = 8 + len(body)
    return struct.pack("<IHH", rtype, misc, size) + body


def id_trailer(pid, tid, time):
    """sample_id_all trailer for SAMPLE_TYPE: TID, TIME."""
    return struct.pack("<IIQ", pid, tid, time)


def comm(pid, tid, name, time, trailer=None):
    """A PERF_RECORD_COMM with the trailer of SAMPLE_TYPE, or TRAILER
    (trailer_of() another event's)."""
    name = name.encode()[:15] + b"\0"
    name = name.ljust((len(name) + 7) // 8 * 8, b"\0")
    return _record(RECORD_COMM, 0, struct.pack("<II", pid, tid) + name +
                   (id_trailer(pid, tid, time) if trailer is None else trailer))


def mmap(pid, tid, start, length, pgoff, filename, time):
    """A PERF_RECORD_MMAP of FILENAME (executable) in PID's user space."""
    name = filename.encode() + b"\0"
    name = name.ljust((len(name) + 7) // 8 * 8, b"\0")
    return _record(RECORD_MMAP, MISC_USER,
                   struct.pack("<IIQQQ", pid, tid, start, length, pgoff) + name +
                   id_trailer(pid, tid, time))


def fork(pid, tid, ppid, ptid, time):
    return _record(RECORD_FORK, 0, struct.pack("<IIIIQ", pid, ppid, tid, ptid, time) +
                   id_trailer(pid, tid, time))


def exit_(pid, tid, time):
    return _record(RECORD_EXIT, 0, struct.pack("<IIIIQ", pid, pid, tid, tid, time) +
                   id_trailer(pid, tid, time))


def sample(pid, tid, time, chain, ip=None, misc=MISC_KERNEL):
    ip = chain[1] if ip is None else ip
    body = struct.pack("<QIIQQQ", ip, pid, tid, time, 1000000, len(chain))
    body += struct.pack("<%dQ" % len(chain), *chain)
    return _record(RECORD_SAMPLE, misc, body)


def deferred_sample(pid, tid, time, kernel_ips, cookie):
    return sample(pid, tid, time,
                  [CONTEXT_KERNEL] + list(kernel_ips) + [CONTEXT_USER_DEFERRED, cookie])


def callchain_deferred(pid, tid, time, cookie, user_ips, size=None):
    """A PERF_RECORD_CALLCHAIN_DEFERRED; SIZE cuts it (a hostile record)."""
    body = struct.pack("<QQ", cookie, len(user_ips))
    body += struct.pack("<%dQ" % len(user_ips), *user_ips)
    body += id_trailer(pid, tid, time)
    rec = _record(RECORD_CALLCHAIN_DEFERRED, MISC_USER, body)
    if size is not None:
        rec = struct.pack("<IHH", RECORD_CALLCHAIN_DEFERRED, MISC_USER, size) + rec[8:size]
    return rec


def finished_round():
    return _record(RECORD_FINISHED_ROUND, 0, b"")


def zstd(data):
    """One zstd frame of DATA, by the zstd command (perf record -z writes
    a frame per record)."""
    import subprocess
    return subprocess.run(["zstd", "-q", "-c", "-1"], input=data, check=True,
                          capture_output=True).stdout


def compressed(records, v2=True):
    """RECORDS compressed into one record as 'perf record -z' writes it:
    PERF_RECORD_COMPRESSED2 (7.x: data_size, padding to 8 bytes) or the
    older PERF_RECORD_COMPRESSED (unaligned)."""
    data = zstd(b"".join(records))
    if not v2:
        return _record(RECORD_COMPRESSED, 0, data)
    body = struct.pack("<Q", len(data)) + data
    return _record(RECORD_COMPRESSED2, 0, body.ljust((len(body) + 7) // 8 * 8, b"\0"))


# HEADER_COMPRESSED: version, type (1: zstd), level, ratio, and the size of
# the buffer a record decompresses into.
COMPRESSED_FEATURE = struct.pack("<IIIII", 1, 1, 1, 4, 256 * 1024)


def feature_record(feat, data=b""):
    """A pipe's PERF_RECORD_HEADER_FEATURE; without DATA, the end marker."""
    return _record(RECORD_HEADER_FEATURE, 0, struct.pack("<Q", feat) + data)


def perf_string(text):
    """A string of a feature section: its length, then the string and
    zeros up to a multiple of 64 bytes (header.c's do_write_string)."""
    data = text.encode() + b"\0"
    data = data.ljust((len(data) + 63) // 64 * 64, b"\0")
    return struct.pack("<I", len(data)) + data


def cmdline_feature(args):
    """HEADER_CMDLINE: the count of ARGS, then each."""
    return struct.pack("<I", len(args)) + b"".join(perf_string(a) for a in args)


def build_id_feature(build_id, filename):
    """HEADER_BUILD_ID of one user DSO: a perf_record_header_build_id, its
    20-byte BUILD_ID sized, its FILENAME padded to 64 bytes."""
    name = filename.encode() + b"\0"
    name = name.ljust((len(name) + 63) // 64 * 64, b"\0")
    body = struct.pack("<i20sBBH", -1, build_id, len(build_id), 0, 0) + name
    return struct.pack("<IHH", 67, MISC_USER | 1 << 15, 8 + len(body)) + body


def event_desc(attrs, names, ids):
    """HEADER_EVENT_DESC: for each attr of ATTRS (of one size), its bytes,
    the count of its IDS, its name, then its ids."""
    out = struct.pack("<II", len(attrs), len(attrs[0]))
    for a, name, i in zip(attrs, names, ids):
        out += a + struct.pack("<I", len(i)) + perf_string(name)
        out += struct.pack("<%dQ" % len(i), *i)
    return out


# Events of different sample types in one file (PERF_SAMPLE_IDENTIFIER
# first in a sample and last in a sample_id trailer, as perf record does
# when the types differ): records of any SAMPLE_TYPE, with an id.

def trailer_of(sample_type, pid, tid, time, ident=0, cpu=0):
    """The sample_id_all trailer of an event of SAMPLE_TYPE."""
    t = b""
    if sample_type & SAMPLE_TID:
        t += struct.pack("<II", pid, tid)
    if sample_type & SAMPLE_TIME:
        t += struct.pack("<Q", time)
    if sample_type & SAMPLE_ID:
        t += struct.pack("<Q", ident)
    if sample_type & SAMPLE_CPU:
        t += struct.pack("<II", cpu, 0)
    if sample_type & SAMPLE_IDENTIFIER:
        t += struct.pack("<Q", ident)
    return t


def sample_of(sample_type, pid, tid, time, chain, ident=0, cpu=0, misc=MISC_KERNEL,
              raw=b"\0" * 4):
    """A PERF_RECORD_SAMPLE of an event of SAMPLE_TYPE (IP, TID, TIME,
    ID, CPU, PERIOD, CALLCHAIN, RAW and IDENTIFIER only); RAW, after the
    callchain, with its size makes whole u64s."""
    b = b""
    if sample_type & SAMPLE_IDENTIFIER:
        b += struct.pack("<Q", ident)
    if sample_type & SAMPLE_IP:
        b += struct.pack("<Q", chain[1])
    if sample_type & SAMPLE_TID:
        b += struct.pack("<II", pid, tid)
    if sample_type & SAMPLE_TIME:
        b += struct.pack("<Q", time)
    if sample_type & SAMPLE_ID:
        b += struct.pack("<Q", ident)
    if sample_type & SAMPLE_CPU:
        b += struct.pack("<II", cpu, 0)
    if sample_type & SAMPLE_PERIOD:
        b += struct.pack("<Q", 1000000)
    if sample_type & SAMPLE_CALLCHAIN:
        b += struct.pack("<Q%dQ" % len(chain), len(chain), *chain)
    if sample_type & SAMPLE_RAW:
        b += struct.pack("<I", len(raw)) + raw
    return _record(RECORD_SAMPLE, misc, b)


def callchain_deferred_of(sample_type, pid, tid, time, cookie, user_ips, ident=0,
                          cpu=0, nr=None):
    """A PERF_RECORD_CALLCHAIN_DEFERRED of an event of SAMPLE_TYPE; NR
    claims another count of addresses than it holds."""
    body = struct.pack("<QQ", cookie, len(user_ips) if nr is None else nr)
    body += struct.pack("<%dQ" % len(user_ips), *user_ips)
    return _record(RECORD_CALLCHAIN_DEFERRED, MISC_USER,
                   body + trailer_of(sample_type, pid, tid, time, ident, cpu))


def write(path, records, attrs=None, features=(), pipe=False, ids=None,
          end=HEADER_LAST_FEATURE_612):
    """Write a perf.data file: ATTRS (default one attr()), the RECORDS
    (bytes each) and the feature bits FEATURES, each with an empty
    section, or a dict of feature bit -> section contents.  IDS: a list of sample ids per attr (none by default: with
    one attr every record is of that event).  PIPE writes what 'perf
    record -o -' writes instead: a 16-byte header, a
    PERF_RECORD_HEADER_ATTR record per attr with its ids, a
    PERF_RECORD_HEADER_FEATURE per feature of a dict and their end
    marker END (6.12's; a newer perf's is larger), then the records."""
    attrs = attrs or [attr()]
    ids = ids or [[] for _ in attrs]
    if not isinstance(features, dict):
        features = {f: b"" for f in features}
    if pipe:
        feats = [feature_record(f, d) for f, d in sorted(features.items())]
        feats += [feature_record(end)] if feats else []
        with open(path, "wb") as f:
            f.write(MAGIC + struct.pack("<Q", 16))
            f.write(b"".join(_record(RECORD_HEADER_ATTR, 0, a + struct.pack(
                "<%dQ" % len(i), *i)) for a, i in zip(attrs, ids)))
            f.write(b"".join(feats + list(records)))
        return
    attr_size = len(attrs[0]) + 16
    attrs_off = FILE_HEADER_SIZE
    attrs_len = attr_size * len(attrs)
    ids_off = attrs_off + attrs_len
    id_blob = b"".join(struct.pack("<%dQ" % len(i), *i) for i in ids)
    data = b"".join(records)
    data_off = ids_off + len(id_blob)
    bitmap = 0
    for f in features:
        bitmap |= 1 << f
    header = MAGIC + struct.pack("<QQ", FILE_HEADER_SIZE, attr_size)
    header += struct.pack("<QQQQQQ", attrs_off, attrs_len, data_off, len(data), 0, 0)
    header += bitmap.to_bytes(32, "little")
    assert len(header) == FILE_HEADER_SIZE
    # The ids lie between the attrs and the data, each attr's file
    # section pointing at its own.
    body = b""
    at = ids_off
    for a, i in zip(attrs, ids):
        body += a + struct.pack("<QQ", at if i else 0, 8 * len(i))
        at += 8 * len(i)
    # The feature section table, one section per feature bit, then
    # their contents.
    feat_off = data_off + len(data) + 16 * len(features)
    table, contents = b"", b""
    for f in sorted(features):
        table += struct.pack("<QQ", feat_off + len(contents), len(features[f]))
        contents += features[f]
    with open(path, "wb") as f:
        f.write(header + body + id_blob + data + table + contents)


# Kernel and user addresses of the crafted stacks: no symbols resolve them,
# the tests look at the addresses perf prints.
KERNEL_IPS = [0xffffffff81000100, 0xffffffff81000200]
USER_IPS = [0x401000, 0x401100, 0x401200]


def deferred_recording(path, threads=1, entries=1, samples_per_entry=2,
                       round_every=0, exit_threads=False, lose_every=0,
                       compress=0, v2=True, features=None, **kw):
    """A recording of THREADS threads, each making ENTRIES kernel entries
    with SAMPLES_PER_ENTRY samples deferred and then the entry's record
    (cookie = entry << 12 | thread).  Every LOSE_EVERY-th record is left
    out (a lost record); EXIT_THREADS ends each thread with an EXIT.
    COMPRESS: the records after the COMMs in that many compressed records
    ('perf record -z': PERF_RECORD_COMPRESSED2, or COMPRESSED without
    V2), with HEADER_COMPRESSED among the FEATURES (a dict)."""
    recs = []
    t = 1000
    n = 0
    for th in range(threads):
        pid = 100 + th
        recs.append(comm(pid, pid, "t%d" % th, t))
        t += 1
    body = []
    for e in range(entries):
        for th in range(threads):
            pid = 100 + th
            cookie = (e + 1) << 12 | (th + 1)
            for _ in range(samples_per_entry):
                body.append(deferred_sample(pid, pid, t, KERNEL_IPS, cookie))
                t += 1
            n += 1
            if not (lose_every and n % lose_every == 0):
                body.append(callchain_deferred(pid, pid, t, cookie, USER_IPS))
            t += 1
            if round_every and n % round_every == 0:
                body.append(finished_round())
    if exit_threads:
        for th in range(threads):
            pid = 100 + th
            body.append(exit_(pid, pid, t))
            t += 1
    features = dict(features or {})
    if compress:
        step = (len(body) + compress - 1) // compress
        body = [compressed(body[i:i + step], v2=v2) for i in range(0, len(body), step)]
        features[HEADER_COMPRESSED] = COMPRESSED_FEATURE
    write(path, recs + body, features=features, **kw)


# Malformed and other-endian streams: the hostile inputs of the perf tools'
# tests, which doc/upstream/fixes-perf/ feeds to any perf too.

def other_malformed(tmp_path, kind):
    """A file whose third record is malformed in a way perf checked
    before the series: a SAMPLE whose callchain nr runs past its end
    (perf cannot parse it), a record smaller than its header, a record
    of an unknown type whose size is not a multiple of 8."""
    recs = [comm(100, 100, "t0", 1),
            deferred_sample(100, 100, 5, KERNEL_IPS, 0x1001)]
    if kind == "sample-nr":
        rec = sample(100, 100, 6, [CONTEXT_KERNEL] + KERNEL_IPS)
        rec = rec[:40] + (1000).to_bytes(8, "little") + rec[48:]
        msg = "Can't parse sample"
    elif kind == "short-header":
        rec = struct.pack("<IHH", RECORD_SAMPLE, 0, 4) + b"\0" * 4
        msg = "[0x4]: failed to process type: 9"
    else:
        rec = _record(30, 0, b"\0" * 12)
        msg = "[0x14]: failed to process type: 30"
    path = str(tmp_path / f"{kind}.data")
    write(path, recs + [rec])
    return path, msg


def be_attr_pipe(path, claimed, held):
    """A big-endian pipe stream: one PERF_RECORD_HEADER_ATTR whose
    perf_event_attr claims CLAIMED bytes (attr.size) but whose record
    holds only HELD bytes of it, and no ids."""
    a = struct.pack(">IIQQQQQ", PERF_TYPE_SOFTWARE, claimed,
                    PERF_COUNT_SW_CPU_CLOCK, 4000, SAMPLE_TYPE, 0,
                    0).ljust(held, b"\0")[:held]
    with open(path, "wb") as f:
        f.write(struct.pack(">QQ", 0x32454c4946524550, 16) +
                struct.pack(">IHH", RECORD_HEADER_ATTR, 0, 8 + held) + a)


# (attr.size claimed, bytes of the attr the record holds): a record cut
# short, an attr.size past the record by little, by much, and by so much
# that header.size - 8 - attr.size, as the int mem_bswap_64() takes, is
# 1.9 GB; and a record that does not even hold attr.type and attr.size.
BAD_BE_ATTRS = [(ATTR_SIZE_612, 64), (ATTR_SIZE_612, ATTR_SIZE_612 - 8),
                (0xfff0, ATTR_SIZE_612), (0x90000000, ATTR_SIZE_612),
                (ATTR_SIZE_612, 4)]


def pipe_with_record(path, rtype, body=b"\0" * 8, endian=">"):
    """A pipe stream of ENDIAN (">" big, "<" little): a whole attr, then
    one record of type RTYPE with BODY."""
    a = struct.pack(endian + "IIQQQQQ", PERF_TYPE_SOFTWARE, ATTR_SIZE_612,
                    PERF_COUNT_SW_CPU_CLOCK, 4000, SAMPLE_TYPE, 0,
                    0).ljust(ATTR_SIZE_612, b"\0")
    with open(path, "wb") as f:
        f.write(struct.pack(endian + "QQ", 0x32454c4946524550, 16) +
                struct.pack(endian + "IHH", RECORD_HEADER_ATTR, 0, 8 + len(a)) + a +
                struct.pack(endian + "IHH", rtype, 0, 8 + len(body)) + body)


def be_pipe_with_record(path, rtype, body=b"\0" * 8):
    """The same stream, big-endian (needs swapping on x86)."""
    pipe_with_record(path, rtype, body)


def run_stdin(perf, path, *args, timeout=120):
    """PERF ARGS -i - with the stream at PATH on its stdin, no pager; an
    ASan perf exits 98 on a report."""
    with open(path, "rb") as f:
        return subprocess.run([perf, *args, "-i", "-"], stdin=f,
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PERF_PAGER": "cat",
                                   "HOME": "/nonexistent",
                                   "ASAN_OPTIONS": "detect_leaks=0:exitcode=98"})


# Reading what a perf writes (perf inject's output): the attrs, features
# and records of a little-endian file or pipe, and the fields of a sample.

def read(path):
    """(attrs, features, records) of the perf.data file or pipe stream at
    PATH: attrs a list of (perf_event_attr bytes, ids), features a dict of
    feature bit -> contents, records a list of bytes (those of a pipe's
    attrs and features among them)."""
    data = open(path, "rb").read()
    assert data[:8] == MAGIC, data[:8]
    if struct.unpack_from("<Q", data, 8)[0] == 16:
        return _read_pipe(data)
    attr_size, attrs_off, attrs_len, data_off, data_len = \
        struct.unpack_from("<QQQQQ", data, 16)
    attrs = []
    for at in range(attrs_off, attrs_off + attrs_len, attr_size):
        ids_off, ids_len = struct.unpack_from("<QQ", data, at + attr_size - 16)
        attrs.append((data[at:at + attr_size - 16],
                      list(struct.unpack_from("<%dQ" % (ids_len // 8), data, ids_off))))
    bitmap = int.from_bytes(data[72:104], "little")
    features, table = {}, data_off + data_len
    for feat in range(256):
        if bitmap >> feat & 1:
            off, size = struct.unpack_from("<QQ", data, table)
            features[feat] = data[off:off + size]
            table += 16
    return attrs, features, _records(data, data_off, data_off + data_len)


def _records(data, off, end):
    out = []
    while off + 8 <= end:
        size = struct.unpack_from("<H", data, off + 6)[0]
        assert size >= 8, f"a {size} byte record at {off:#x}"
        out.append(data[off:off + size])
        off += size
    return out


def _read_pipe(data):
    attrs, features, records = [], {}, _records(data, 16, len(data))
    for rec in records:
        rtype = record_type(rec)
        if rtype == RECORD_HEADER_ATTR:
            size = struct.unpack_from("<I", rec, 12)[0]
            body = rec[8 + size:]
            attrs.append((rec[8:8 + size],
                          list(struct.unpack("<%dQ" % (len(body) // 8), body))))
        elif rtype == RECORD_HEADER_FEATURE and len(rec) > 16:
            features[struct.unpack_from("<Q", rec, 8)[0]] = rec[16:]
    return attrs, features, records


def record_type(rec):
    return struct.unpack_from("<I", rec)[0]


def attr_flags(a):
    """The bitfield word of a perf_event_attr (ATTR_* bits)."""
    return struct.unpack_from("<Q", a, 40)[0]


def attr_sample_type(a):
    return struct.unpack_from("<Q", a, 24)[0]


def event_desc_attrs(data):
    """(attr bytes, name) of each event of a HEADER_EVENT_DESC."""
    nr, size = struct.unpack_from("<II", data)
    out, at = [], 8
    for _ in range(nr):
        a = data[at:at + size]
        nr_ids, name_len = struct.unpack_from("<II", data, at + size)
        name = data[at + size + 8:at + size + 8 + name_len].rstrip(b"\0").decode()
        out.append((a, name))
        at += size + 8 + name_len + 8 * nr_ids
    return out


def parse_callchain_deferred(rec):
    """(tid, cookie, user addresses) of a PERF_RECORD_CALLCHAIN_DEFERRED of
    an event of SAMPLE_TYPE (its trailer: pid, tid, time)."""
    cookie, nr = struct.unpack_from("<QQ", rec, 8)
    ips = struct.unpack_from("<%dQ" % nr, rec, 24)
    return struct.unpack_from("<I", rec, 24 + 8 * nr + 4)[0], cookie, list(ips)


def parse_sample(sample_type, rec):
    """The fields sample_of() writes of a PERF_RECORD_SAMPLE of an event
    of SAMPLE_TYPE, with the offset of its callchain ("callchain_at")."""
    f, at = {}, 8

    def take(name, fmt):
        nonlocal at
        f[name] = struct.unpack_from("<" + fmt, rec, at)
        at += struct.calcsize(fmt)

    for bit, name, fmt in ((SAMPLE_IDENTIFIER, "identifier", "Q"), (SAMPLE_IP, "ip", "Q"),
                           (SAMPLE_TID, "tid", "II"), (SAMPLE_TIME, "time", "Q"),
                           (SAMPLE_ID, "id", "Q"), (SAMPLE_CPU, "cpu", "II"),
                           (SAMPLE_PERIOD, "period", "Q")):
        if sample_type & bit:
            take(name, fmt)
    if sample_type & SAMPLE_CALLCHAIN:
        f["callchain_at"] = at
        take("nr", "Q")
        take("callchain", "%dQ" % f["nr"][0])
    if sample_type & SAMPLE_RAW:
        take("raw_size", "I")
        take("raw", "%ds" % f["raw_size"][0])
    return f
