"""MAINTAINERS.snippet is the series' MAINTAINERS entry as the whole
series leaves it: the hunks of patches/ (the fixes series, then the
feature series) replayed in order, no kernel tree needed."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY = "USER SPACE STACK UNWINDING"
HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def hunks(patch):
    """(old lines, new lines) of each MAINTAINERS hunk of a patch."""
    with open(patch) as f:
        lines = f.read().split("\n")
    out, file_ = [], None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("diff --git "):
            file_ = line.split()[-1]
        m = HUNK.match(line)
        if not m or file_ != "b/MAINTAINERS":
            continue
        left, right = int(m.group(1) or 1), int(m.group(2) or 1)
        old, new = [], []
        while left or right:
            tag, text = lines[i][:1], lines[i][1:]
            i += 1
            if tag in (" ", ""):
                old.append(text)
                new.append(text)
                left, right = left - 1, right - 1
            elif tag == "-":
                old.append(text)
                left -= 1
            elif tag == "+":
                new.append(text)
                right -= 1
        out.append((old, new))
    return out


def series_files():
    """The patch files of both series in the order they apply, as ci/series/lib.sh
    lists them (the fixes first): asked of lib.sh, not repeated here."""
    r = subprocess.run(["bash", "-c", '. ci/series/lib.sh && series_files'],
                       cwd=ROOT, capture_output=True, text=True, check=True,
                       env={k: v for k, v in os.environ.items()
                            if k != "VMTEST_PATCHES"})
    files = r.stdout.split()
    assert files and all("/patches/fixes/" in f or "/patches/feature/" in f
                         for f in files), files
    return files


def series_entry():
    text = None
    patches = series_files()
    for p in patches:
        for old, new in hunks(p):
            if text is None:
                text = old      # the first hunk's context: enough for all
            at = next((k for k in range(len(text) - len(old) + 1)
                       if text[k:k + len(old)] == old), None)
            assert at is not None, f"{p}: its MAINTAINERS hunk does not " \
                "apply after the ones before it"
            text[at:at + len(old)] = new
    assert text and ENTRY in text, "no patch adds the series' entry"
    start = text.index(ENTRY)
    end = text.index("", start)
    return text[start:end]


def test_the_snippet_is_the_series_entry():
    with open(os.path.join(ROOT, "MAINTAINERS.snippet")) as f:
        snippet = f.read().splitlines()
    assert snippet == series_entry()
