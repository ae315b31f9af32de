"""Profilers nobody here wrote, to read what our perf writes: the perf of
Debian bookworm (6.1) and trixie (6.12), unpatched, and hotspot's
perfparser (bookworm's hotspot 1.3.0; trixie has no hotspot).

Each is unpacked with the shared libraries it needs, never installed
(ci/build/fetch-deb.sh --libs), under build/readers/SUITE, and runs
through its suite's own ld-linux on those libraries alone: the machine's
own packages (bookworm's linux-perf may be installed here, at another
version) play no part.
"""
import os
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEST = os.path.join(ROOT, "build", "readers")
LIBDIRS = ["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu"]
PERFPARSER = "usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser"

# What each suite's readers need: packages unpacked as they are, and
# packages unpacked with their shared libraries (hotspot's own would pull
# in its whole GUI; perfparser needs Qt's core and network libraries).
SUITES = {
    "bookworm": {"plain": ["hotspot"],
                 "libs": ["linux-perf", "libqt5core5a", "libqt5network5"]},
    "trixie": {"plain": [], "libs": ["linux-perf"]},
}

# name: (suite, package, program)
READERS = {
    "perf-6.1": ("bookworm", "linux-perf", "usr/bin/perf"),
    "perf-6.12": ("trixie", "linux-perf", "usr/bin/perf"),
    "perfparser": ("bookworm", "hotspot", PERFPARSER),
}


class FetchError(Exception):
    """The suite's packages could not be fetched (no network, no such
    package in the suite): what fetch-deb.sh said."""


def fetch(suite):
    """Unpack SUITE's readers under build/readers/SUITE (again only when
    the suite moved); the directory."""
    dest = os.path.join(DEST, suite)
    want = SUITES[suite]
    for opts, pkgs in (([], want["plain"]), (["--libs"], want["libs"])):
        if not pkgs:
            continue
        r = subprocess.run(["bash", os.path.join(ROOT, "ci/build/fetch-deb.sh"), *opts,
                            suite, dest, *pkgs], capture_output=True, text=True,
                           timeout=900)
        if r.returncode:
            raise FetchError(f"ci/build/fetch-deb.sh {' '.join(opts + [suite])}: "
                             f"{r.stderr.strip()[-500:]}")
    return dest


def versions(suite, dest):
    """'package version' of SUITE's readers, as unpacked in DEST."""
    with open(os.path.join(dest, "versions")) as f:
        unpacked = dict(line.split() for line in f if line.strip())
    return ", ".join(f"{pkg} {unpacked[pkg]}" for pkg in
                     sorted({p for s, p, _ in READERS.values() if s == suite}))


def loader(dest):
    for d in LIBDIRS:
        path = os.path.join(dest, d, "ld-linux-x86-64.so.2")
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"no ld-linux-x86-64.so.2 in {dest}")


def command(dest, program):
    """The command line that runs PROGRAM of DEST on DEST's libraries."""
    return [loader(dest), "--library-path",
            ":".join(os.path.join(dest, d) for d in LIBDIRS), os.path.join(dest, program)]


def missing_libraries(dest, program):
    """The libraries PROGRAM needs that DEST lacks (ld.so --list)."""
    cmd = command(dest, program)
    r = subprocess.run([cmd[0], "--list", *cmd[1:]], capture_output=True, text=True,
                       timeout=60)
    return [line.split()[0] for line in r.stdout.splitlines() if "not found" in line]


# perfparser's output ("QPERFSTREAM", perfunwind.h/.cpp of KDAB's
# perfparser): a magic and a stream version, then messages, each a
# little-endian size and a big-endian QDataStream record whose first byte
# is its type.
PP_MAGIC = b"QPERFSTREAM\0"
PP_LOCATION, PP_ERROR, PP_SAMPLE = 3, 8, 13


def perfparser_messages(data):
    assert data[:len(PP_MAGIC)] == PP_MAGIC, data[:16]
    off = len(PP_MAGIC) + 4
    while off < len(data):
        n = struct.unpack_from("<I", data, off)[0]
        yield data[off + 4:off + 4 + n]
        off += 4 + n


def perfparser_samples(data):
    """(samples, errors) of perfparser's output: each sample as (tid, time,
    the addresses of its frames, innermost first), each error message as
    text.  A location is its id, then its address; a sample is its pid,
    tid, time, cpu, then the location ids of its frames."""
    locations, samples, errors = {}, [], []
    for m in perfparser_messages(data):
        if m[0] == PP_LOCATION:
            lid, address = struct.unpack_from(">iQ", m, 1)
            locations[lid] = address
        elif m[0] == PP_SAMPLE:
            _, tid, time, _, n = struct.unpack_from(">IIQII", m, 1)
            samples.append((tid, time, struct.unpack_from(">%di" % n, m, 25)))
        elif m[0] == PP_ERROR:
            # error code, then a QString: a byte count and UTF-16
            n = struct.unpack_from(">I", m, 5)[0]
            errors.append(m[9:9 + n].decode("utf-16-be"))
    return [(tid, time, [locations[f] for f in frames])
            for tid, time, frames in samples], errors
