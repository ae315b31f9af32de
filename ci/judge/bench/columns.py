"""The terminal table, one line per workload, events and K, driven by
COLUMNS: the header is made from the same list as the cells, so a label
always sits over its values."""
from dataclasses import dataclass

from .model import TIMED


@dataclass(frozen=True)
class Col:
    head: str
    width: int
    value: object           # row -> a number, a string, or None ("-")
    spec: str = ""
    left: bool = False

    def cell(self, row):
        v = self.value(row)
        text = "-" if v is None else v if isinstance(v, str) else \
            format(v, self.spec)
        return text.ljust(self.width) if self.left else text.rjust(self.width)

    def header(self):
        return self.head.ljust(self.width) if self.left else \
            self.head.rjust(self.width)


def text(s):
    """A separator: the same in the header and in every row."""
    return Col(s, len(s), lambda row: s)


def label(s):
    """A group's name: in the header only."""
    return Col(s, len(s), lambda row: "")


def ok(row, mode, key):
    """A figure of an ok mode, else None."""
    m = row[mode]
    return m.get(key) if m["status"] == "ok" else None


def bytes_of(mode, width):
    """Bytes per sample, or the mode's status where it did not run."""
    def value(row):
        m = row[mode]
        return m.get("bytes") if m["status"] == "ok" else m["status"][:width]
    return value


def entries(row):
    """Samples per entry, from the first of deferred, in place, none
    that ran."""
    m = next((row[x] for x in ("deferred", "inplace") if row[x]["status"] ==
              "ok"), row["none"])
    return m.get("samples_per_entry")


def floor(key):
    return lambda row: ok(row, "deferred", key) \
        if "floor" in row["deferred"] else None


COLUMNS = (
    Col("workload", 10, lambda r: r["workload"], left=True),
    Col("depth", 6, lambda r: r["depth"]),
    text(" "),
    Col("ev", 4, lambda r: r["events"], left=True),
    Col("K", 2, lambda r: r["k"]),
    text(" |"), label("bytes/sample:"),
    Col("none", 5, bytes_of("none", 5), ".0f"),
    Col("inplace", 8, bytes_of("inplace", 8), ".0f"),
    Col("deferred", 12, bytes_of("deferred", 12), ".0f"),
    Col("floor", 7, floor("floor"), ".1f"),
    Col("dev", 7, floor("floor_dev"), "+.1%"),
    Col("-fb", 6, floor("floor_dev_nofallback"), "+.1%"),
    text(" |"),
    Col("smp/ent", 8, entries, ".2f"),
    Col("rec/ent", 8, lambda r: ok(r, "deferred", "records_per_entry"),
        ".2f"),
    text(" |"), label("  walks/entry:"),
    Col("inpl", 5, lambda r: ok(r, "inplace", "walks_inplace"), ".2f"),
    Col("defer", 7, lambda r: ok(r, "deferred", "walks_deferred"), ".2f"),
    Col("fallbk", 8, lambda r: ok(r, "deferred", "walks_inplace"), ".2f"),
    text(" |"), label(" overhead:"),
    Col("inpl", 5, lambda r: ok(r, "inplace", "overhead"), ".2f"),
    Col("defer", 6, lambda r: ok(r, "deferred", "overhead"), ".2f"),
    text(" |"),
    Col("none ms", 8, lambda r: ok(r, "none", "wall_ms"), ".0f"),
    text(" |"),
    Col("walk ns", 8, lambda r: r.get(TIMED, {}).get("walk_ns"), ".0f"),
)
HEADER = "".join(c.header() for c in COLUMNS)


def table(rows):
    """The terminal table: one line per workload, events and K."""
    return "\n".join([HEADER, "-" * len(HEADER)] + [
        "".join(c.cell(row) for c in COLUMNS) for row in rows])
