"""The realstacks-* lines of a results log (selftests/realstacks/run.sh
prints them) and the data of each run, unpacked."""
import base64
import binascii
import io
import re
import tarfile
from dataclasses import dataclass, field

from ci.judge.vmtest import tagged_lines

FILES = ("shim.log", "script.txt", "record.err", "script.err")
# The recordings, when the plan asked for them (run.sh's "data"): the
# run's own and, for a deferred run, the workload sampled on cpu-clock;
# kept as bytes
BINARY = ("perf.data", "sampled.data")
DATA = re.compile(r"^# realstacks-data: (\S+)$")
DATA_END = re.compile(r"^# realstacks-data-end: (\S+)$")


@dataclass
class Run:
    program: str
    build: str
    entry: str                # "shim" or "libc" (where the calls enter
                              # the kernel, run.sh's plan)
    mode: str                 # "deferred" or "inplace"
    calls: str
    record: int               # perf record's exit code
    script: int               # perf script's
    check: str                # the workload's own check ("ok", "md5=...")
    files: dict = field(default_factory=dict)  # FILES name -> text,
                                               # BINARY name -> bytes
    problems: list = field(default_factory=list)

    @property
    def name(self):
        return f"{self.program}-{self.build}-{self.entry}-{self.mode}"


@dataclass
class Results:
    start: dict = None
    end: dict = None
    perf: str = ""
    manifest: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    errors: list = field(default_factory=list)  # realstacks-error lines
    exit: int = None                            # vmtest-realstacks-exit


def fields(line):
    """The key=value words after a "# realstacks-TAG:" line's colon."""
    return tagged_lines.fields("tag " + line.split(":", 1)[1])


def unpack(name, b64_lines):
    """FILES name -> text (BINARY name -> bytes) of one run's base64
    tar.gz, and problems."""
    try:
        raw = base64.b64decode("".join(b64_lines), validate=True)
        files = {}
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
            for m in tar.getmembers():
                if m.isfile() and m.name in BINARY:
                    files[m.name] = tar.extractfile(m).read()
                elif m.isfile() and m.name in FILES:
                    files[m.name] = tar.extractfile(m).read().decode(
                        errors="replace")
    except (binascii.Error, ValueError, tarfile.TarError, EOFError,
            OSError) as e:
        return {}, [f"{name}: its data does not unpack: {e}"]
    missing = [f for f in ("shim.log", "script.txt") if f not in files]
    return files, ([f"{name}: {', '.join(missing)} missing from its data"]
                   if missing else [])


def parse(text):
    """Results of a results log's text (the guest's or run.sh's stdout)."""
    res = Results()
    blob, blob_name, pending = None, None, None
    for raw in text.splitlines():
        line = raw.strip()
        if blob is not None:
            m = DATA_END.match(line)
            if m:
                if pending is None or m[1] != blob_name:
                    res.errors.append(f"data of {blob_name} ended as {m[1]}")
                else:
                    pending.files, probs = unpack(blob_name, blob)
                    pending.problems += probs
                blob, blob_name = None, None
            elif line.startswith("#"):
                res.errors.append(f"data of {blob_name} cut short by: "
                                  f"{line[:100]}")
                blob, blob_name = None, None
            else:
                blob.append(line)
                continue
        m = DATA.match(line)
        if m:
            blob, blob_name = [], m[1]
            if pending is None or pending.name != blob_name:
                res.errors.append(f"data of {blob_name} without its run line")
                pending = None
            continue
        if line.startswith("# realstacks-start:"):
            res.start = fields(line)
        elif line.startswith("# realstacks-perf:"):
            res.perf = line.split(":", 1)[1].strip()
        elif line.startswith("# realstacks-manifest:"):
            res.manifest.append(line.split(":", 1)[1].strip())
        elif line.startswith("# realstacks-run:"):
            f = fields(line)
            pending = Run(f.get("program", "?"), f.get("build", "?"),
                          f.get("entry", "?"), f.get("mode", "?"),
                          f.get("calls", ""),
                          _int(f.get("record")), _int(f.get("script")),
                          f.get("check", ""))
            res.runs.append(pending)
        elif line.startswith("# realstacks-error:"):
            res.errors.append(line.split(":", 1)[1].strip())
        elif line.startswith("# realstacks-end:"):
            res.end = fields(line)
        elif line.startswith("# vmtest-realstacks-exit:"):
            res.exit = _int(line.split(":", 1)[1])
    if blob is not None:
        res.errors.append(f"data of {blob_name} never ended")
    for r in res.runs:
        if not r.files and not r.problems:
            r.problems.append(f"{r.name}: no data")
    return res


def _int(v):
    try:
        return int(str(v).strip())
    except ValueError:
        return None
