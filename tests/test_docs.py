"""The reference docs name patches and architectures as patches/ has them.

doc/kernel.md and doc/abi.md name a patch by its subject in quotes
("Add the deferred unwinding interface", or with its prefix, "perf: Add
the deferred user callchain ABI"; "... for per-CPU events" is the end of
a subject), never by its number, which moves as the series grows. The
fixes keep their numbers (fixes/NNNN), which the fixes series fixes. The
architectures doc/kernel.md lists are those the series enables."""
import glob
import os
import re

import pytest

from test_doc_claims import kernel_fixes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["doc/kernel.md", "doc/abi.md"]
NUMBERED = re.compile(r"\b[Pp]atch(?:es)?\s+\d")
REFERENCE = re.compile(r"\b[Pp]atch(?:es)?\s+\"")
ENABLES = re.compile(r"^unwind_user/(\w+): Enable frame pointer unwinding")
ARCH_NAMES = {"x86": "x86-64", "arm64": "arm64"}


def subjects(series):
    """Subjects of patches/SERIES/NNNN-*.patch by number (no cover letter)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "patches", series,
                                              "[0-9]*.patch"))):
        with open(path) as f:
            head = f.read().split("\n\n", 1)[0]
        m = re.search(r"^Subject: \[PATCH (\d+)/\d+\] (.*(?:\n .*)*)", head,
                      re.M)
        if m and int(m.group(1)):
            out[int(m.group(1))] = " ".join(m.group(2).split())
    return out


def quoted_references(text):
    """Each "..." of a sentence that names patches: from "Patch(es) \"" to
    the first '.', ')' or ':' outside quotes."""
    refs = []
    for m in REFERENCE.finditer(text):
        i, inside, cur = m.end() - 1, False, ""
        while i < len(text):
            c = text[i]
            if c == '"':
                if inside:
                    refs.append(" ".join(cur.split()))
                    cur = ""
                inside = not inside
            elif inside:
                cur += c
            elif c in ".):":
                break
            i += 1
    return refs


def names_a_subject(ref, all_subjects):
    for s in all_subjects:
        bare = s.split(": ", 1)[-1]
        if ref.startswith("... ") and s.endswith(ref[4:]):
            return True
        if ref in (s, bare):
            return True
    return False


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


@pytest.mark.parametrize("doc", DOCS)
def test_no_patch_is_named_by_its_number(doc):
    found = [m.group(0) for m in NUMBERED.finditer(read(doc))]
    assert not found, (f"{doc} names patches by number ({found}): name "
                       "them by subject, in quotes")


@pytest.mark.parametrize("doc", DOCS)
def test_every_quoted_patch_subject_is_in_the_series(doc):
    all_subjects = list(subjects("feature").values()) + \
        list(subjects("fixes").values())
    refs = quoted_references(read(doc))
    assert refs, f"{doc} names no patch at all"
    missing = [r for r in refs if not names_a_subject(r, all_subjects)]
    assert not missing, (f"{doc} names patches that patches/ does not "
                         f"have: {missing}")


def test_fix_numbers_are_the_fixes_series():
    fixes = subjects("fixes")
    text = read("doc/kernel.md")
    for m in re.finditer(r"`fixes/(\d{4})`(?:-`(\d{4})`)?", text):
        for n in filter(None, m.groups()):
            assert int(n) in fixes, f"doc/kernel.md names fixes/{n}: no such patch"
    # "five kernel fixes and seven of perf tools": the perf tools ones last
    kernel = kernel_fixes()
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven",
             "eight", "nine", "ten", "eleven", "twelve"]
    said = re.search(r"(\w+) kernel fixes and (\w+) of perf tools", text)
    assert said, "doc/kernel.md no longer says how many fixes of each kind"
    assert said.group(1) == words[len(kernel)]
    assert said.group(2) == words[len(fixes) - len(kernel)]
    assert kernel == list(range(1, len(kernel) + 1)), \
        "the kernel fixes come first in patches/fixes"


def test_architectures_are_those_the_series_enables():
    enabled = set()
    for s in subjects("feature").values():
        m = ENABLES.match(s)
        if m:
            enabled.add(ARCH_NAMES.get(m.group(1), m.group(1)))
    assert enabled, "no patch enables an architecture?"
    m = re.search(r"^Architectures: (.*?)(?:\n\n)", read("doc/kernel.md"),
                  re.M | re.S)
    assert m, "doc/kernel.md has no 'Architectures:' paragraph"
    named = set(re.findall(r"\b(x86-64|arm64|riscv|s390|powerpc|loongarch)\b",
                           m.group(1).split(", patches")[0]))
    assert named == enabled, (f"doc/kernel.md names {sorted(named)}, the "
                              f"series enables {sorted(enabled)}")
    text = read("doc/kernel.md")
    for stale in ("Only\nx86-64 is supported", "Only x86-64 is supported",
                  "(no arm64)"):
        assert stale not in text
