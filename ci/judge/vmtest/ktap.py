"""A small KTAP parser for KUnit's console output and the selftests' KTAP.

It builds a tree of Test nodes from indentation (four spaces a level, as
KUnit and ci/guest/init print it), keeps '#' diagnostics with the result line
they precede, and records every way the stream can be wrong: no plan, a
result count that differs from the plan, a subtest that never got its
result line (the guest died inside it), numbers out of order.
"""
import re
from dataclasses import dataclass, field

from ci.console import TIMESTAMP
VERSION = re.compile(r"^(KTAP|TAP) version \d+$")
PLAN = re.compile(r"^1\.\.(\d+)$")
RESULT = re.compile(r"^(ok|not ok) (\d+)(?: (?:- )?([^#]*?))?\s*(?:#\s*(.*))?$")
SUBTEST = re.compile(r"^# Subtest: (.*)$")


@dataclass
class Test:
    name: str = ""
    number: int = 0
    status: str = ""          # pass, fail, skip; "" while open
    directive: str = ""       # text after '#' on the result line
    plan: int = None
    children: list = field(default_factory=list)
    diagnostics: list = field(default_factory=list)


@dataclass
class Parsed:
    root: Test
    found: bool                # a KTAP version line was seen at all
    problems: list = field(default_factory=list)


def _status(word, directive):
    if directive.upper().startswith("SKIP"):
        return "skip"
    return "pass" if word == "ok" else "fail"


def parse(text, strip_timestamps=True):
    """Parse the first top-level KTAP document in text."""
    root = Test(name="")
    lines = text.splitlines()
    start = None
    for i, raw in enumerate(lines):
        line = TIMESTAMP.sub("", raw) if strip_timestamps else raw
        if VERSION.match(line):
            start = i
            break
    if start is None:
        return Parsed(root, False, ["no KTAP version line"])

    # open_[d] is the test whose results are printed at indent d.
    open_ = {0: root}
    pending_diag = {0: []}
    problems = []
    for raw in lines[start + 1:]:
        line = TIMESTAMP.sub("", raw) if strip_timestamps else raw
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if indent % 4:
            continue
        d = indent // 4
        if d not in open_ and d - 1 not in open_:
            continue  # noise at a depth we are not in
        if VERSION.match(stripped):
            if d == 0:
                break  # a second document: not ours
            open_[d] = Test()
            pending_diag[d] = []
            for deeper in [k for k in open_ if k > d]:
                del open_[deeper]
            continue
        if d not in open_:
            # KUnit may omit the nested version line: a plan or subtest
            # header one level down opens the subtest.
            if PLAN.match(stripped) or SUBTEST.match(stripped):
                open_[d] = Test()
                pending_diag[d] = []
            else:
                continue
        node = open_[d]
        m = PLAN.match(stripped)
        if m:
            node.plan = int(m.group(1))
            continue
        m = SUBTEST.match(stripped)
        if m:
            node.name = m.group(1).strip()
            continue
        m = RESULT.match(stripped)
        if m:
            word, num, name, directive = m.groups()
            child = open_.pop(d + 1, None)
            pending_diag.pop(d + 1, None)
            if child is None:
                child = Test()
            child.name = (name or child.name).strip()
            child.number = int(num)
            child.directive = (directive or "").strip()
            child.status = _status(word, child.directive)
            child.diagnostics = pending_diag.get(d, []) + child.diagnostics
            pending_diag[d] = []
            expected = len(node.children) + 1
            if child.number != expected:
                problems.append(f"{node.name or 'top level'}: result "
                                f"number {child.number}, expected {expected}")
            node.children.append(child)
            if d == 0 and root.plan is not None and \
                    len(root.children) >= root.plan:
                break
            continue
        if stripped.startswith("#"):
            pending_diag.setdefault(d, []).append(stripped[1:].strip())

    for d in sorted(k for k in open_ if k > 0):
        t = open_[d]
        problems.append(f"subtest '{t.name or '?'}' at depth {d} has no "
                        "result line: output ended inside it")
    _check_plans(root, problems, "")
    return Parsed(root, True, problems)


def _check_plans(node, problems, path):
    where = path or "top level"
    if node.plan is None:
        if not path or node.children:
            problems.append(f"{where}: no KTAP plan (1..N)")
    elif node.plan != len(node.children):
        problems.append(f"{where}: plan says {node.plan} tests, "
                        f"{len(node.children)} reported")
    for c in node.children:
        _check_plans(c, problems, f"{path}/{c.name}" if path else c.name)
