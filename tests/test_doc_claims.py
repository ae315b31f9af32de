"""The docs name only what exists: make targets, repository paths, patch
counts and numbers, the counts of things the repository holds.

Each rule below says why it exists. Every doc is read whole and every
stale line is reported at once, as FILE:LINE: what is wrong. Counts and
numbers in dated records (HISTORY) are of their day and not checked;
names there are (a target or path must still exist to be worth naming)."""
import fnmatch
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = sorted(["README.md", "ci/checks/kunit/README.md", "selftests/README.md"] +
              [os.path.relpath(p, ROOT) for p in
               glob.glob(os.path.join(ROOT, "doc/**/*.md"), recursive=True)])
DOCS = [d for d in DOCS if os.path.exists(os.path.join(ROOT, d))]
# Run records and bug reports: their counts and patch numbers are those of
# their date ("12 fixes + 38", "patches 1-39"). doc/mutate.md is generated
# by make mutate from the run it reports.
HISTORY = {"doc/timings.md", "doc/stress.md", "doc/bench.md", "doc/mutate.md",
           "doc/upstream/perf-group-hotplug-uaf.md",
           "doc/upstream/perf-hotplug-irq-work-hang.md"}
# Targets of the kernel's own Makefile that the docs tell you to run in
# your kernel tree, not here.
KERNEL_MAKE_TARGETS = {"mrproper"}
# Top-level directories of a kernel tree: a path under one of them is the
# kernel's, and must be a file the series touches (patches/'s diff
# headers) or one of KERNEL_FILES.
KERNEL_TOP = {"arch", "block", "certs", "crypto", "Documentation", "drivers",
              "fs", "include", "init", "ipc", "kernel", "lib", "mm", "net",
              "samples", "scripts", "security", "sound", "tools", "virt"}
# Kernel files the series does not touch that the harness runs.
KERNEL_FILES = {"scripts/checkpatch.pl", "scripts/get_maintainer.pl",
                "scripts/spdxcheck.py", "scripts/kernel-doc",
                "tools/testing/kunit/kunit.py", "tools/perf/util/setup.py"}
# A name without a '/' is checked as a file only with these endings (a
# bare run.json or summary.txt is a run's output, not a repo file).
CODE_EXT = (".sh", ".py", ".md", ".cc", ".c", ".h", ".mut", ".config",
            ".patch", ".pl")
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven",
         "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen",
         "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
NUM = r"(?<![\w-])(\d+|" + "|".join(WORDS) + r")"


def number(word):
    word = word.lower()
    return int(word) if word.isdigit() else WORDS.index(word)


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def series(name):
    """The patch files of patches/NAME, by number (no cover letter)."""
    out = {}
    for p in glob.glob(os.path.join(ROOT, "patches", name, "[0-9]*.patch")):
        n = int(os.path.basename(p)[:4])
        if n:
            out[n] = p
    return out


FIXES, FEATURE = series("fixes"), series("feature")


def subject(path):
    head = open(path).read().split("\n\n", 1)[0]
    m = re.search(r"^Subject: \[PATCH [^]]*\] (.*(?:\n .*)*)", head, re.M)
    return " ".join(m.group(1).split())


def kernel_fixes():
    """The numbers of the fixes of the kernel, as doc/kernel.md counts
    them: those that change a file outside tools/ (perf tools' change
    tools/ alone)."""
    return sorted(n for n, p in FIXES.items()
                  if any(not f.startswith("tools/") for f in re.findall(
                      r"^\+\+\+ b/(\S+)", open(p).read(), re.M)))


def patched_files():
    files = set()
    for p in glob.glob(os.path.join(ROOT, "patches", "*", "*.patch")):
        for m in re.finditer(r"^\+\+\+ b/(\S+)", open(p).read(), re.M):
            files.add(m.group(1))
    return files


def tracked_files():
    return subprocess.run(["git", "-C", ROOT, "ls-files"], check=True,
                          capture_output=True, text=True).stdout.split()


def make_database(*args):
    """make -p's rules: {target: (prerequisites, recipe)}, nothing run."""
    p = subprocess.run(["make", "-pqrR", "-C", ROOT, *args],
                       capture_output=True, text=True)
    rules, cur = {}, None
    text = p.stdout.split("\n# Files\n", 1)[-1]
    for line in text.splitlines():
        m = re.match(r"^([a-z][\w-]*):(?!=)\s*(.*)$", line)
        if m:
            cur = m.group(1)
            rules[cur] = (m.group(2).split(), [])
        elif line.startswith("\t") and cur:
            rules[cur][1].append(line.strip())
        elif not line.strip():
            cur = None
    return {t: r for t, r in rules.items()
            if not os.path.isfile(os.path.join(ROOT, t))}


def code_spans(text):
    """(offset, content) of each `...` span, which may wrap a line."""
    return [(m.start(1), m.group(1))
            for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", text)]


def code_lines(text):
    """(offset, line) of the lines of indented and fenced code blocks."""
    out, fenced, off = [], False, 0
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            out.append((off, line.strip()))
        off += len(line)
    return out


def make_target_of(command):
    """The target of a `make ...` command line: its first word that is no
    option and no VAR=value."""
    words = command.split()
    if not words or words[0] != "make":
        return None
    for w in words[1:]:
        if not w.startswith("-") and "=" not in w:
            return w
    return None


def doc_claims():
    for doc in DOCS:
        yield doc, read(doc)


# --- the rules ---------------------------------------------------------

def stale_make_targets(targets):
    """`make foo`, a code line `make foo`, and the first column of a
    target table: a make target the Makefile has. Docs outlive renames."""
    out = []
    for doc, text in doc_claims():
        found = [(o, make_target_of(c.replace("\n", " ")))
                 for o, c in code_spans(text) + code_lines(text)]
        for m in re.finditer(r"^\| `([a-z][\w-]*)[^|]*\|", text, re.M):
            header = text[:m.start()].rsplit("\n\n", 1)[-1]
            if header.startswith("| target |"):
                found += [(m.start(), t) for t in
                          re.findall(r"`([a-z][\w-]*)", m.group(0))]
        for off, t in found:
            if t and t not in targets and t not in KERNEL_MAKE_TARGETS:
                out.append(f"{doc}:{line_of(text, off)}: `make {t}`: no such "
                           "target in the Makefile")
    return out


def path_candidates(token):
    """The globs a path-like token stands for: <x>, NAME and SUITE are
    placeholders, {a,b} alternatives."""
    token = re.sub(r"<[^>]*>", "*", token)
    token = re.sub(r"(?<![\w.])[A-Z][A-Z_]+(?![\w])", "*", token)
    m = re.search(r"\{([^}]*)\}", token)
    if m:
        return [c for alt in m.group(1).split(",") for c in
                path_candidates(token[:m.start()] + alt + token[m.end():])]
    return [token]


def resolves(pattern, doc_dir, known):
    pattern = pattern.rstrip("/")
    for base in (ROOT, os.path.join(ROOT, doc_dir)):
        # selftests/NAME: the program built from selftests/NAME.cc (or .c).
        if any(glob.glob(os.path.join(base, pattern + ext))
               for ext in ("", ".cc", ".c")):
            return True
    # A file of the repository or of the series named from where it is
    # (`helpers/ldt_stack.c`, perf's `tests/shell/`), or a directory of one.
    return any(fnmatch.fnmatch(f, pattern) or fnmatch.fnmatch(f, pattern + "/*")
               or fnmatch.fnmatch(f, "*/" + pattern)
               or fnmatch.fnmatch(f, "*/" + pattern + "/*") for f in known)


def stale_paths(tracked, patched):
    """A `path` the reader would look for: it exists in the repository
    (from the root, or from the doc's directory), or it is a kernel file
    the series touches (patches/*.patch's +++ lines) or runs. build/,
    absolute and guest paths are outputs and machines, not the repo."""
    top = {f.split("/")[0] for f in tracked}
    known = set(tracked) | patched | KERNEL_FILES
    out = []
    for doc, text in doc_claims():
        for off, tok in code_spans(text):
            # `.patch`, `.config`: a kind of file, or the kernel's config.
            if re.search(r"\s", tok) or tok.startswith(("/", "~", "...",
                                                        "build/")) \
                    or re.match(r"^\.\w+$", tok):
                continue
            first = tok.split("/")[0]
            is_path = "/" in tok and (first in top or first in KERNEL_TOP)
            is_file = tok.endswith(CODE_EXT) and re.match(r"^[\w.*<>/-]+$", tok)
            if not (is_path or is_file):
                continue
            # The repository first (from the doc's directory too:
            # selftests/README.md's lib/), then the kernel's tree.
            ok = all(resolves(c, os.path.dirname(doc), known)
                     for c in path_candidates(tok))
            if not ok and first in KERNEL_TOP and first not in top:
                ok = all(any(fnmatch.fnmatch(f, c) or f.startswith(c.rstrip("/") + "/")
                             for f in patched | KERNEL_FILES)
                         for c in path_candidates(tok))
            if not ok:
                out.append(f"{doc}:{line_of(text, off)}: `{tok}`: no such "
                           "file in the repository or in the series")
    return out


def stale_script_names(tracked, patched):
    """A script named in a comment of the harness's own scripts exists
    somewhere (by its file name, so that moving scripts between ci/'s
    directories does not break this)."""
    names = {os.path.basename(f) for f in tracked | patched | KERNEL_FILES}
    out = []
    for f in sorted(tracked):
        if not re.match(r"(ci|fuzz|\.ci)/", f) or \
                not (f.endswith((".sh", ".py")) or f == ".ci/run"):
            continue
        for i, line in enumerate(read(f).splitlines(), 1):
            comment = re.search(r"(?:^|\s)#(.*)", line)
            for name in re.findall(r"([\w.-]+\.(?:sh|py))\b",
                                   comment.group(1) if comment else ""):
                if name not in names:
                    out.append(f"{f}:{i}: names {name}: no such script")
    return out


def stale_counts():
    """Counts of the series and of ci/checks/mutate/: "Thirteen fixes", "(six in
    the kernel, seven in perf tools)", "38 feature patches", "51 patches",
    "22 breakages". A count said of a part ("those three fixes", "ten
    fixes then") is not the series' and is left alone, nor is "12 fixes +
    38", the way a dated run names the series of its day."""
    n_kernel = len(kernel_fixes())
    mutants = len(glob.glob(os.path.join(ROOT, "ci/checks/mutate/*.mut")))
    want = {"fixes": len(FIXES), "feature patches": len(FEATURE),
            "patches": len(FIXES) + len(FEATURE), "kernel fixes": n_kernel,
            "breakages": mutants}
    out = []
    for doc, text in doc_claims():
        if doc in HISTORY:
            continue
        for m in re.finditer(NUM + r"\s+(kernel fixes|feature patches|fixes|"
                             r"patches|breakages)\b", text, re.I):
            before = text[max(0, m.start() - 12):m.start()].lower()
            after = text[m.end():m.end() + 6]
            if re.search(r"(those|these|other|first|last|but|only) $", before) \
                    or after.startswith((" then", " +")):
                continue
            what = m.group(2).lower()
            if number(m.group(1)) != want[what]:
                out.append(f"{doc}:{line_of(text, m.start())}: "
                           f"\"{m.group(0)}\": there are {want[what]} {what}")
        for m in re.finditer(r"\(" + NUM + r" in the kernel, " + NUM +
                             r" in perf tools\)|" + NUM + r" kernel fixes and "
                             + NUM + " of perf tools", text, re.I):
            k, p = [number(g) for g in m.groups() if g]
            if (k, p) != (n_kernel, len(FIXES) - n_kernel):
                out.append(f"{doc}:{line_of(text, m.start())}: \"{m.group(0)}\":"
                           f" the fixes are {n_kernel} of the kernel and "
                           f"{len(FIXES) - n_kernel} of perf tools")
    return out


def stale_patch_numbers():
    """"fix 6", "fixes 7-9, 12 and 13", "patch 33", "feature 12/38",
    `fixes/0007`: a patch of that number exists (a fix in patches/fixes/,
    a patch in patches/feature/)."""
    items = r"(\d+(?:-\d+)?(?:(?:, \d+(?:-\d+)?(?=,| and))*(?:,? and \d+(?:-\d+)?))?)"
    out = []
    for doc, text in doc_claims():
        if doc in HISTORY:
            continue
        refs = []
        for m in re.finditer(r"\b(fix|fixes|patch|patches|feature)\s+" + items +
                             r"(?:/(\d+))?\b", text, re.I):
            kind = "fixes" if m.group(1).lower().startswith("fix") else "feature"
            nums = []
            for a, b in re.findall(r"(\d+)(?:-(\d+))?", m.group(2)):
                nums += [int(a)] + ([int(b)] if b else [])
            refs.append((m.start(), kind, nums, m.group(3), m.group(0)))
        for m in re.finditer(r"`(fixes|feature)/(\d{4})`(?:-`(\d{4})`)?", text):
            nums = [int(n) for n in m.groups()[1:] if n]
            refs.append((m.start(), m.group(1), nums, None, m.group(0)))
        for off, kind, nums, of, said in refs:
            have = FIXES if kind == "fixes" else FEATURE
            bad = [n for n in nums if n not in have]
            if bad or (of and int(of) != len(have)):
                out.append(f"{doc}:{line_of(text, off)}: \"{said}\": "
                           f"patches/{kind}/ has patches 1-{len(have)}")
    return out


def stale_deps_claims(rules):
    """"Every target but `help` ... installs what it needs first": each
    other target reaches `deps` through its prerequisites, a sub-make or
    its script, also with KERNEL=DIR (no `tree`, which runs deps)."""
    def reaches_deps(t, seen):
        if t == "deps":
            return True
        if t in seen or t not in rules:
            return False
        seen.add(t)
        pre, recipe = rules[t]
        subs = [make_target_of(re.sub(r"^@?\$\(MAKE\)", "make", r))
                for r in recipe if "$(MAKE)" in r]
        for r in recipe:
            m = re.search(r"bash (\S+\.sh)", r)
            if m and os.path.exists(os.path.join(ROOT, m.group(1))) and \
                    re.search(r"^\s*step deps make", read(m.group(1)), re.M):
                return True
        return any(reaches_deps(p, seen) for p in pre + subs if p)
    out = []
    for doc, text in doc_claims():
        for m in re.finditer(r"(?:Every|Each)\s+(?:target|command)"
                             r"(?:\s+but\s+([^.]*?))?\s+installs\s+what\s+it"
                             r"\s+needs",
                             text):
            exempt = set(re.findall(r"`(?:make )?([a-z][\w-]*)`", m.group(1) or ""))
            bad = sorted(t for t in rules if t not in exempt
                         and not reaches_deps(t, set()))
            if bad:
                out.append(f"{doc}:{line_of(text, m.start())}: says every "
                           f"target installs its deps: with KERNEL=DIR, "
                           f"{', '.join(bad)} do not")
    return out


def stale_section_counts(targets):
    """A heading that counts commands ("## Two commands") counts the
    distinct make targets of its section's code blocks."""
    out = []
    for doc, text in doc_claims():
        for m in re.finditer(r"^#+ " + NUM + r" commands[ \t]*$", text,
                             re.M | re.I):
            end = re.search(r"^#", text[m.end():], re.M)
            section = text[m.end():m.end() + end.start() if end else None]
            cmds = {make_target_of(c) for _, c in code_lines(section)} - {None}
            if number(m.group(1)) != len(cmds):
                out.append(f"{doc}:{line_of(text, m.start())}: \"{m.group(0)}\""
                           f": its section shows {len(cmds)}: {sorted(cmds)}")
    return out


def stale_row_references():
    """"(the first row)": rows are added as times are measured, so a row
    is named by what it holds (date, commit), never by its position."""
    out = []
    for doc, text in doc_claims():
        for m in re.finditer(r"\bthe (first|second|third|fourth|fifth|sixth|"
                             r"last|\d+(?:st|nd|rd|th)) row\b", text, re.I):
            out.append(f"{doc}:{line_of(text, m.start())}: \"{m.group(0)}\": "
                       "name the row by its date and commit")
    return out


def stale_sframe_versions():
    """ci/checks/kunit/README.md's versions of SFrame for the unwind_sframe suite are
    those the suite's source in patches/ builds sections of."""
    used = set()
    for p in glob.glob(os.path.join(ROOT, "patches/feature/*.patch")):
        for diff in re.split(r"^diff --git ", read(p), flags=re.M):
            if diff.startswith("a/kernel/unwind/tests/unwind_sframe_kunit.c"):
                used |= set(re.findall(r"^\+.*SFRAME_VERSION_(\d)", diff, re.M))
    text = read("ci/checks/kunit/README.md")
    m = re.search(r"^\| `unwind_sframe`.*?versions ([\d, and]+\d)", text, re.M)
    if not m:
        return ["ci/checks/kunit/README.md: the unwind_sframe row names no versions"]
    said = set(re.findall(r"\d", m.group(1)))
    if said != used:
        return [f"ci/checks/kunit/README.md:{line_of(text, m.start())}: versions "
                f"{m.group(1)}: the suite tests versions {', '.join(sorted(used))}"]
    return []


def test_docs_name_only_what_exists():
    rules = make_database()
    rules_kernel = make_database("KERNEL=/nonexistent/linux")
    tracked, patched = set(tracked_files()), patched_files()
    stale = (stale_make_targets(set(rules)) + stale_paths(tracked, patched) +
             stale_script_names(tracked, patched) + stale_counts() +
             stale_patch_numbers() + stale_deps_claims(rules_kernel) +
             stale_section_counts(set(rules)) + stale_row_references() +
             stale_sframe_versions())
    assert not stale, "stale lines:\n" + "\n".join(stale)


def test_readme_is_short_and_its_time_line_is_written_by_make_check():
    """README is the front door (at most 200 lines); its one timing line is
    the one ci/checks/timings.py rewrites after a cold make check."""
    text = read("README.md")
    assert text.count("\n") <= 200, f"README.md: {text.count(chr(10))} lines"
    from ci.checks import timings
    assert timings.README_LINE.search(text), \
        f"README.md has no line ci/checks/timings.py can rewrite ({timings.README_LINE.pattern})"
