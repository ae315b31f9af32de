#!/usr/bin/env python3
"""make matrix: the series in the configurations and architectures a
kernel build bot tries.

usage: python3 -m ci.checks.matrix --src TREE [--rows NAME,...]
           [--randconfigs N] [--seed S] [--doc FILE] [--keep-objects]
           [--fresh] [--status]

Each row configures the tree (the series applied, TREE's HEAD) as the
row says (a config target, for randconfig with the seed printed, then the
row's options, each verified), builds it whole (make all, with the row's
Debian cross compiler) and then compares warnings at W=1 in the C files
the series adds or changes: those files are compiled again at W=1 in the
series' tree and, where they exist, in the base's (a worktree of TREE's
vmtest-base tag given the series' .config, trimmed by olddefconfig),
and a warning the base does not have, compared without line numbers,
fails the row. The row also says whether CONFIG_UNWIND_USER ended up as
the row expects: on where the architecture provides the pieces, off where
it does not. The guest rows (GUEST_ROWS: PREEMPT_RT, Debian's own
configurations) are make vmtest of a CONFIG= on an ARCH=: built, booted,
the whole suite run and judged.

A row's result is kept in the repository (doc/matrix/ROW.json: a row
takes up to an hour and the whole table many, more than one session's
machine keeps its build/) with what it depends on: the row and its
compiler, for a build row the sources a kernel build reads
(kernel_sources: a commit that changes only perf, the selftests or the
documentation keeps it), for a guest row the whole tree's content (its
git tree, the same on any machine that applied the same series) and the
harness's selftests, guest, judges, builds and the Makefile that
runs them (GUEST_PARTS). A later
run with the same uses it and says so (--fresh: not), so rows run one by
one (--rows), on any machine, make the whole table at the end. Logs and
objects stay under build/out/matrix/. A Debian row (DISTRO_ROWS), a
randconfig one (hours each) or an arm64 one (over an hour) builds in its
own directory there and keeps a state beside its objects while it
builds; a run stopped or killed midway is resumed by the next run of
that row on the same tree (a randconfig row's name comes from --seed:
the same SEED, or --rows randconfig-0x...), which builds what is
missing and reports the time of all its runs (rm -r
build/out/matrix/ROW, or --fresh, starts over); a run names the stopped
rows it does not run.

Prints the table (built, new W=1 warnings, UNWIND_USER, booted, suite,
time) and writes it to build/out/matrix/table.md; with every row (no
--rows), also to --doc (doc/matrix.md). Such a whole run builds none of
Debian's full rows but shows the saved result of each that has one for
the tree and names the others. --status builds nothing: it says, row by
row, whether a run would use a saved result or run the row (its saved
result stale, or none) and what a stopped run left to resume. Exit: 0
every row passed (--status: every row has a current passing result), 1
a row failed (--status: or has none), 2 usage or setup. A randconfig row is reproduced by --rows
randconfig-SEED.
"""
import argparse
import contextlib
import datetime
import hashlib
import json
import lzma
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from ci.build import configs, kconfig, lock
from ci.judge.vmtest.rundir import speed
from ci.series import tested_section

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
OUT = os.path.join(BUILD, "out", "matrix")
# Each row's result, committed (see above)
RESULTS = os.path.join(ROOT, "doc", "matrix")
BASE_TAG = "vmtest-base"


class Row:
    """One configuration: kernel ARCH=, Debian's cross compiler (prefix,
    package), the config target, options set after it (name -> y/n),
    and what CONFIG_UNWIND_USER must be ("y", "n")."""

    def __init__(self, name, karch, target, options=None, cross="",
                 package="", unwind="n", why="", seed=None, start=None,
                 resume=False):
        self.name, self.karch, self.target = name, karch, target
        self.options, self.cross, self.package = options or {}, cross, package
        self.unwind, self.why, self.seed = unwind, why, seed
        self.start = start  # a whole .config (.xz) the target starts from
        # a build longer than a session has: a run stopped midway leaves
        # its objects for the next (run_row)
        self.resume = resume


ROWS = [
    # x86 selects PERF_EVENTS, which only implies UNWIND_USER: the no-configs
    # say no to it.
    Row("x86_64-tinyconfig", "x86_64", "tinyconfig"),
    Row("x86_64-allnoconfig", "x86_64", "allnoconfig"),
    Row("x86_64-defconfig", "x86_64", "defconfig", unwind="y"),
    Row("x86_64-defconfig-nounwind", "x86_64", "defconfig",
        {"PERF_EVENTS": "y", "UNWIND_USER": "n"},
        why="perf without the unwinder: deferred requests refused"),
    # The SFrame reader is a choice of its own (UNWIND_USER_SFRAME): the
    # series must build without it (the walk then goes by frame pointers).
    Row("x86_64-defconfig-nosframe", "x86_64", "defconfig",
        {"UNWIND_USER_SFRAME": "n"}, unwind="y",
        why="the unwinder without its SFrame reader"),
    # objtool checks that nothing runs out of line with user access open
    # (the SFrame reader's lookups); UBSAN's bounds checks are such calls.
    # IBT off: with it objtool runs once on vmlinux.o, not on each object,
    # so the W=1 compile of the series' files would not show its warnings.
    Row("x86_64-defconfig-ubsan", "x86_64", "defconfig",
        {"UBSAN": "y", "UBSAN_BOUNDS": "y", "UBSAN_TRAP": "n",
         "X86_KERNEL_IBT": "n"}, unwind="y",
        why="sanitizer calls where objtool checks user access regions"),
    # x86 selects PERF_EVENTS: perf off is tried on arm64, which does not.
    # CoreSight selects PERF_EVENTS: off with it. PERF_EVENTS only implies
    # UNWIND_USER, which olddefconfig keeps as defconfig set it: asked for
    # by name, so the row is the unwinder with ftrace its only consumer.
    # arm64's defconfig builds for 59-138 min cold on two cores (2026-11-30
    # and 12-01), more than a session has beside its other work: its rows
    # resume (run_row). The shared directory gave them nothing: the second
    # of them built longer than the first.
    Row("arm64-defconfig-noperf", "arm64", "defconfig",
        {"CORESIGHT": "n", "PERF_EVENTS": "n", "UNWIND_USER": "y"},
        cross="aarch64-linux-gnu-", package="gcc-aarch64-linux-gnu",
        unwind="y", resume=True,
        why="the unwinder without perf: arm64 lets PERF_EVENTS go (x86 "
        "selects it)"),
    # arm64 calls the unwinder's entry hooks from its own exit to user mode
    # code and sigreturn: they must build as the stubs of a kernel without it
    Row("arm64-allnoconfig", "arm64", "allnoconfig",
        cross="aarch64-linux-gnu-", package="gcc-aarch64-linux-gnu",
        why="arm64's entry hooks without the unwinder"),
    Row("i386-defconfig", "i386", "defconfig", cross="i686-linux-gnu-",
        package="gcc-i686-linux-gnu",
        why="generic entry, but the unwinder is x86-64's (HAVE_UNWIND_USER_FP)"),
    # defconfig leaves pseudo-NMIs off; the guest and the series' NMI-context
    # requests have them on.
    Row("arm64-defconfig", "arm64", "defconfig", {"ARM64_PSEUDO_NMI": "y"},
        cross="aarch64-linux-gnu-", package="gcc-aarch64-linux-gnu",
        unwind="y", resume=True),
    Row("arm64-defconfig-nopnmi", "arm64", "defconfig",
        {"ARM64_PSEUDO_NMI": "n"}, cross="aarch64-linux-gnu-",
        package="gcc-aarch64-linux-gnu", unwind="y", resume=True,
        why="no pseudo-NMIs: PMU samples in IRQ context"),
    Row("riscv64-defconfig", "riscv", "defconfig", cross="riscv64-linux-gnu-",
        package="gcc-riscv64-linux-gnu",
        why="generic entry, but the series gives riscv no unwinder"),
    Row("s390x-defconfig", "s390", "defconfig", cross="s390x-linux-gnu-",
        package="gcc-s390x-linux-gnu",
        why="generic entry, but the series gives s390 no unwinder"),
    Row("powerpc64le-defconfig", "powerpc", "ppc64le_defconfig",
        cross="powerpc64le-linux-gnu-", package="gcc-powerpc64le-linux-gnu",
        why="no generic entry in 6.12: nothing of the series selected"),
]
# Not a row: loongarch64, for which neither bookworm nor trixie nor sid
# packages a cross compiler.
RANDCONFIGS = 3

# Rows only named with --rows: Debian's own configuration, every module
# built (4051 on amd64, 4164 on arm64), the series' new options taking
# their defaults as olddefconfig gives them. About two hours each on two
# cores: amd64's took 112 min from an empty ccache (about 17900 objects,
# 2.2 to 3.3 a second; the others not yet measured). A run cut short
# resumes only on the same machine (see run_row), so on a new machine
# start such a row first.
# Without debug info, as the guest's built-in part (debian-guest.config):
# it adds no code and no warning, doubles the build, and Debian's BTF
# needs pahole, which no build here installs.
NO_DEBUG_INFO = {"DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT": "n",
                 "DEBUG_INFO_NONE": "y"}
DISTRO_ROWS = [
    Row("x86_64-debian", "x86_64", "olddefconfig", NO_DEBUG_INFO,
        start=configs.BASES["debian"]["x86_64"], unwind="y", resume=True,
        why="Debian's amd64 configuration, modules and all"),
    Row("x86_64-debian-rt", "x86_64", "olddefconfig", NO_DEBUG_INFO,
        start=configs.BASES["debian-rt"]["x86_64"], unwind="y", resume=True,
        why="Debian's amd64 -rt configuration, modules and all"),
    Row("arm64-debian", "arm64", "olddefconfig", NO_DEBUG_INFO,
        cross="aarch64-linux-gnu-", package="gcc-aarch64-linux-gnu",
        start=configs.BASES["debian"]["arm64"], unwind="y", resume=True,
        why="Debian 13's arm64 configuration, modules and all"),
]


class GuestRow:
    """A guest kernel of the harness (ci/build/configs.py's CONFIG= on an
    ARCH=) built and booted by make vmtest, the whole suite run in it."""

    def __init__(self, arch, config, why=""):
        self.name, self.karch, self.config = f"{arch}-{config}-guest", \
            arch, config
        self.why = why
        # the compiler make vmtest builds it with (ci/build/kernel.sh),
        # and its Debian package
        self.cross = "aarch64-linux-gnu-" if arch == "arm64" else ""
        self.package = "gcc-aarch64-linux-gnu" if self.cross else ""


GUEST_ROWS = [
    GuestRow("x86_64", "rt", "PREEMPT_RT, as Debian 13's -rt flavours"),
    GuestRow("x86_64", "rt-debug", "PREEMPT_RT with lockdep and KASAN"),
    GuestRow("arm64", "rt", "PREEMPT_RT on arm64"),
    GuestRow("arm64", "rt-debug", "PREEMPT_RT on arm64, lockdep and KASAN"),
    GuestRow("x86_64", "debian", "Debian's amd64 configuration, built-in"),
    GuestRow("x86_64", "debian-rt", "Debian's amd64 -rt configuration, "
             "built-in"),
    GuestRow("arm64", "debian", "Debian 13's arm64 configuration, built-in"),
]


# A randconfig row resumes as Debian's do: an x86-64 randconfig builds
# thousands of options in, with debug info (SEED=20261201's three on
# 6.12.118: 4987 =y with KASAN, 3685 and 2918; Debian's built-in part has
# 1736), hours on two cores.
def randconfig_row(seed):
    return Row(f"randconfig-{seed:#x}", "x86_64", "randconfig", seed=seed,
               unwind="any", why="KCONFIG_SEED printed in the name",
               resume=True)


def log(msg):
    print(f"==> matrix: {msg}", file=sys.stderr, flush=True)


def kernel_cc_env():
    """What ci/build/lib.sh's use_kernel_cc exports for the guest kernels'
    builds, read from it (one place): ccache's settings (depend mode: 99 s
    against 138 s for ccache's default mode on kernel/ and mm/, cold) and
    fixed version strings. {} if it cannot be read."""
    r = subprocess.run(["bash", "-c", '. "$1" && use_kernel_cc && env -0',
                        "-", os.path.join(ROOT, "ci", "build", "lib.sh")],
                       capture_output=True)
    if r.returncode != 0:
        return {}
    pairs = (kv.split("=", 1) for kv in
             r.stdout.decode(errors="replace").split("\0") if "=" in kv)
    return {k: v for k, v in pairs
            if k.startswith(("CCACHE_", "KBUILD_BUILD_"))}


def make_args(row, obj, cc_cache):
    cc = f"{row.cross}gcc"
    if cc_cache:
        cc = f"{os.path.join(ROOT, 'ci', 'build', 'ccache-cc')} {cc}"
    args = ["make", "-s", f"O={obj}", f"ARCH={row.karch}", f"CC={cc}",
            f"-j{os.cpu_count() or 2}"]
    if row.cross:
        args.append(f"CROSS_COMPILE={row.cross}")
    return args


def run(args, cwd, log_path, env=None):
    """Run ARGS in CWD, stderr and stdout to LOG_PATH (appended); the
    exit code. A matrix stopped meanwhile (SIGTERM, ^C) stops it and all
    it started: its own process group, so that make's compilers do not go
    on beside the next kernel build."""
    with open(log_path, "a") as f:
        f.write("$ " + " ".join(args) + "\n")
        f.flush()
        proc = subprocess.Popen(args, cwd=cwd, stdout=f, stderr=f, env=env,
                                start_new_session=True)
        try:
            return proc.wait()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()


def exit_on_sigterm():
    """SIGTERM ends the matrix as ^C does: through run()'s clean-up, and
    the first one alone: another (pkill -s sends one, and make matrix's
    make passes its own on) would raise again inside the clean-up and cut
    it short, leaving the kernel build running."""
    def end(*_):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(143)
    signal.signal(signal.SIGTERM, end)


def read_config(obj, name=".config"):
    """The options of OBJ's config file NAME: CONFIG_X -> value, "n" for
    those said not set."""
    with open(os.path.join(obj, name), errors="replace") as f:
        return kconfig.parse(f)


def configure(row, tree, obj, logp, cc_cache):
    """The row's .config in OBJ; the list of problems (an option that did
    not stick is one)."""
    os.makedirs(obj, exist_ok=True)
    env = dict(os.environ)
    if row.seed is not None:
        env["KCONFIG_SEED"] = hex(row.seed)
    base = make_args(row, obj, cc_cache)
    if row.start:
        start = os.path.join(ROOT, row.start)
        if not os.path.exists(start):
            return [f"{start} missing: " + ("fetching it failed"
                                            if configs.fetch_base(row.start)
                                            else "run 'make deps'")]
        with lzma.open(start, "rt") as src, \
                open(os.path.join(obj, ".config"), "w") as dst:
            dst.write(src.read())
    if run(base + [row.target], tree, logp, env) != 0:
        return [f"make {row.target} failed (see {logp})"]
    if row.options:
        cfg = [os.path.join(tree, "scripts", "config"), "--file",
               os.path.join(obj, ".config")]
        for name, val in row.options.items():
            cfg += ["--enable" if val == "y" else "--disable", name]
        if run(cfg, tree, logp) != 0 or \
                run(base + ["olddefconfig"], tree, logp) != 0:
            return [f"setting {row.options} failed (see {logp})"]
    have = read_config(obj)
    return [f"CONFIG_{n}={v} did not stick (.config has "
            f"{have.get('CONFIG_' + n, 'n')})"
            for n, v in row.options.items()
            if have.get("CONFIG_" + n, "n") != v]


def base_config(row, obj, base, bobj, logp, cc_cache):
    """The base configured as the series' build was: its .config, which
    olddefconfig trims to what the base defines (a randconfig's seed would
    choose differently in a Kconfig without the series' symbols)."""
    os.makedirs(bobj, exist_ok=True)
    with open(os.path.join(obj, ".config")) as src, \
            open(os.path.join(bobj, ".config"), "w") as dst:
        dst.write(src.read())
    return run(make_args(row, bobj, cc_cache) + ["olddefconfig"], base,
               logp) == 0


def series_files(tree):
    """The C files the series adds or changes (not tools/), those of them
    the base has, and the headers it adds or changes (their warnings count
    too, from whichever C file includes them)."""
    def changed(filt, *globs):
        return subprocess.run(
            ["git", "-C", tree, "diff", "--name-only", f"--diff-filter={filt}",
             f"{BASE_TAG}..HEAD", "--", *globs, ":!tools/"],
            capture_output=True, text=True, check=True).stdout.split()
    files = changed("AM", "*.c")
    added = set(changed("A", "*.c"))
    return files, [f for f in files if f not in added], changed("AM", "*.h")


WARNING = re.compile(r"^(\S+?):(\d+:)?(\d+:)? (warning|error): (.*)$")
OFFSET = re.compile(r"\+0x[0-9a-f]+\b")


def warnings(log_text, files):
    """'file: warning: text' of the compiler lines about FILES (as FILES
    name them), without line and column numbers, counted (a list with
    repeats). objtool's lines name the object (FILE.o) and an offset into
    the function, which moves with any change to it: counted for FILE.c,
    without the offset."""
    out = []
    for line in log_text.splitlines():
        m = WARNING.match(line.strip())
        if not m:
            continue
        path, text = m.group(1), m.group(5)
        if path.endswith(".o"):
            path = path[:-2] + ".c"
            text = OFFSET.sub("", text)
        # Named as the series names it: the two trees' paths differ.
        f = next((f for f in files if path == f or path.endswith("/" + f)),
                 None)
        if f:
            out.append(f"{f}: {m.group(4)}: {text}")
    return out


def new_warnings(base, series):
    """SERIES's warnings BASE does not have, counted."""
    left = list(base)
    out = []
    for w in series:
        if w in left:
            left.remove(w)
        else:
            out.append(w)
    return out


def w1_targets(obj, files):
    """The objects of FILES that the series' build made in OBJ (what this
    configuration compiles)."""
    return [f[:-2] + ".o" for f in files if f.endswith(".c")
            and os.path.exists(os.path.join(obj, f[:-2] + ".o"))]


def w1(row, tree, obj, targets, logp, cc_cache):
    """Compile TARGETS again at W=1 in OBJ; (the log, a problem or None).
    Each target's object and its .cmd go first: kbuild would compile one
    again for W=1's new command line anyway, but not one a stopped run
    already compiled at W=1 (a resumed row's base builds nothing else),
    whose warnings would then be missing from the log. -k and
    -Wno-error: with CONFIG_WERROR (x86's defconfigs) the first warning
    would stop make and leave the count to the order of the targets."""
    for t in targets:
        d, f = os.path.split(os.path.join(obj, t))
        for gone in (os.path.join(d, f), os.path.join(d, f".{f}.cmd")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(gone)
    w1_log = logp + ".w1"
    open(w1_log, "w").close()
    rc = run(make_args(row, obj, cc_cache) + ["-k", "W=1",
                                              "KCFLAGS=-Wno-error"]
             + targets, tree, w1_log)
    text = open(w1_log, errors="replace").read()
    problem = None if rc == 0 else \
        f"make W=1 of {len(targets)} objects failed (see {w1_log})"
    return text, problem


def base_tree(tree):
    """A worktree of TREE's base tag under build/matrix-base."""
    wt = os.path.join(BUILD, "matrix-base")
    want = subprocess.run(["git", "-C", tree, "rev-parse",
                           f"{BASE_TAG}^{{commit}}"], capture_output=True,
                          text=True, check=True).stdout.strip()
    have = subprocess.run(["git", "-C", wt, "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    if have != want:
        subprocess.run(["git", "-C", tree, "worktree", "remove", "--force",
                        wt], capture_output=True)
        shutil.rmtree(wt, ignore_errors=True)  # not a worktree (any more)
        subprocess.run(["git", "-C", tree, "worktree", "prune"], check=True)
        subprocess.run(["git", "-C", tree, "worktree", "add", "-q",
                        "--detach", wt, BASE_TAG], check=True)
    return wt


def objects_of(row, keep):
    """Where ROW builds: OBJS/series and OBJS/base. One object directory
    for every row (unless kept): ccache hashes the compiler's command
    line and its -I paths, so a row built at the same place as another
    hits the cache for every file whose preprocessed text the rows share
    (defconfig and its variants). A row that resumes builds in its own,
    where a stopped run leaves its objects for the next."""
    d = os.path.join(OUT, row.name)
    return d if keep or row.resume else os.path.join(OUT, "obj")


def resume_key(row, tree):
    """What a resumed row's objects must have been built from: the
    tree's content, the compiler, the configuration it starts from."""
    return {"content": tree_content(tree, "HEAD"),
            "compiler": compiler(row.cross), "start": start_digest(row)}


def tree_content(tree, commit):
    """COMMIT's git tree: its content, the same for the same series
    applied on any machine (git am's commits differ by date)."""
    return subprocess.run(["git", "-C", tree, "rev-parse",
                           f"{commit}^{{tree}}"],
                          capture_output=True, text=True).stdout.strip()


def resumed(row, tree, fresh=False):
    """The seconds earlier runs of ROW spent on the objects it finds in
    its directory, when they are theirs: its state (spent()) names the
    same resume_key. Otherwise 0, and whatever objects are there go:
    another tree's may look newer than the sources the new tree brought,
    and without a state nothing says whose they are. A run ended
    outright is resumed too: kbuild writes an object's .cmd only after
    its command succeeded and rebuilds an object without one, so a
    compile cut short is done again. FRESH: start over."""
    d = os.path.join(OUT, row.name)
    try:
        with open(os.path.join(d, "resume.json")) as f:
            had = json.load(f)
        ok = not fresh and had["key"] == resume_key(row, tree)
        earlier = float(had["seconds"]) if ok else 0.0
    except (OSError, ValueError, KeyError, TypeError):
        ok, earlier = False, 0.0
    if ok:
        log(f"{row.name}: resuming the build stopped after {earlier:.0f} s")
    else:
        for o in ("series", "base"):
            shutil.rmtree(os.path.join(d, o), ignore_errors=True)
    return earlier


def spent(row, tree, seconds):
    """Write ROW's state, which resumed() reads: its objects are of
    resume_key's tree and took SECONDS (all its runs') so far."""
    d = os.path.join(OUT, row.name)
    tmp = os.path.join(d, "resume.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"seconds": round(seconds), "key": resume_key(row, tree)},
                  f)
    os.replace(tmp, os.path.join(d, "resume.json"))


@contextlib.contextmanager
def keeping_state(row, tree, earlier, every=60):
    """Keep ROW's state while its build runs: written at the start,
    every EVERY seconds (a session's end may kill the matrix outright)
    and at the end, however it ends (SIGTERM, ^C, an error, done)."""
    t0 = time.monotonic()
    spent(row, tree, earlier)
    done = threading.Event()

    def beat():
        while not done.wait(every):
            spent(row, tree, earlier + time.monotonic() - t0)
    t = threading.Thread(target=beat, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()
        spent(row, tree, earlier + time.monotonic() - t0)


def run_row(row, tree, base, sources, cc_cache, keep=False, fresh=False):
    """Build ROW; a dict of what the table shows. SOURCES: the series'
    C files, those of them the base has, and its headers. Its objects
    stay until finish_row() (after its result is saved)."""
    t0 = time.monotonic()
    d = os.path.join(OUT, row.name)
    os.makedirs(d, exist_ok=True)
    objs = objects_of(row, keep)
    if not row.resume:
        if objs != d:
            for o in ("series", "base"):
                shutil.rmtree(os.path.join(objs, o), ignore_errors=True)
        res = build_row(row, tree, base, sources, cc_cache, d, objs)
        res["seconds"] = time.monotonic() - t0
        return res
    earlier = resumed(row, tree, fresh)
    with keeping_state(row, tree, earlier):
        res = build_row(row, tree, base, sources, cc_cache, d, objs)
    res["seconds"] = earlier + time.monotonic() - t0
    return res


def finish_row(row, keep=False, ran=True):
    """After ROW's result is saved: its objects go (a defconfig's are
    gigabytes, a Debian row's more; ccache keeps what a rerun needs),
    its logs and .config files stay. Not RAN (its saved result was
    used): only the objects and state a stopped run of a resuming row
    left in its own directory go; the shared directory's are another
    row's, and their .config is not this result's."""
    if keep or not (ran or row.resume):
        return
    d, objs = os.path.join(OUT, row.name), objects_of(row, keep)
    for o in ("series", "base"):
        if ran and os.path.exists(os.path.join(objs, o, ".config")):
            os.makedirs(d, exist_ok=True)
            shutil.copyfile(os.path.join(objs, o, ".config"),
                            os.path.join(d, o + ".config"))
        shutil.rmtree(os.path.join(objs, o), ignore_errors=True)
    if os.path.exists(os.path.join(d, "resume.json")):
        os.unlink(os.path.join(d, "resume.json"))


def build_row(row, tree, base, sources, cc_cache, d, objs):
    """run_row's build of ROW in OBJS/series (OBJS/base for the base),
    logs in D: what the table shows, but the time."""
    files, base_files, headers = sources
    res = {"row": row, "built": "no", "new": [], "unwind": "?",
           "problems": []}
    logp = os.path.join(d, "series.log")
    open(logp, "w").close()
    obj = os.path.join(objs, "series")
    res["problems"] += configure(row, tree, obj, logp, cc_cache)
    blog = os.path.join(d, "base.log")
    open(blog, "w").close()
    bobj = os.path.join(objs, "base")
    if not res["problems"]:
        if run(make_args(row, obj, cc_cache) + ["all"], tree, logp) == 0:
            res["built"] = "yes"
        elif base_config(row, obj, base, bobj, blog, cc_cache) and \
                run(make_args(row, bobj, cc_cache) + ["all"], base,
                    blog) != 0:
            # A build bot reports regressions: Linux 6.12 fails here too.
            res["built"] = "no, nor the base"
        else:
            res["problems"].append(f"the series does not build (see {logp})")
    if os.path.exists(os.path.join(obj, ".config")):
        res["unwind"] = read_config(obj).get("CONFIG_UNWIND_USER", "n")
        if row.unwind != "any" and res["unwind"] != row.unwind:
            res["problems"].append(f"CONFIG_UNWIND_USER={res['unwind']}, "
                                   f"expected {row.unwind}")
    if res["built"] == "yes":
        # The base compiles the same objects, those of files it has
        # (named before w1() removes and compiles them again).
        targets = w1_targets(obj, files)
        btargets = w1_targets(obj, base_files)
        text, problem = w1(row, tree, obj, targets, logp, cc_cache) \
            if targets else ("", None)
        series_w = warnings(text, files + headers)
        base_w = []
        if btargets and not problem:
            if base_config(row, obj, base, bobj, blog, cc_cache) and \
                    run(make_args(row, bobj, cc_cache) + ["prepare"], base,
                        blog) == 0:
                btext, problem = w1(row, base, bobj, btargets, blog,
                                    cc_cache)
                base_w = warnings(btext, files + headers)
            else:
                problem = f"the base does not configure (see {blog})"
        if problem:
            res["problems"].append(problem)
        res["new"] = new_warnings(base_w, series_w)
        res["w1_files"] = len(targets)
        if res["new"]:
            res["problems"].append(f"{len(res['new'])} new W=1 warning(s)")
    return res


LOGS = re.compile(r"^==> logs: (\S+)/\{console,results\}\.log", re.M)


def read_text(d, name):
    """D/NAME's text, "" when it is not there."""
    try:
        with open(os.path.join(d, name), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def suite_result(junit):
    """'N passed, M failed, K skipped' of a vmtest junit.xml, every kind
    of case (run checks, KUnit, selftests) together."""
    total = {"pass": 0, "fail": 0, "skip": 0}
    for c in tested_section.counts(junit).values():
        for k in total:
            total[k] += c[k]
    return f"{total['pass']} passed, {total['fail']} failed, " \
        f"{total['skip']} skipped"


def run_guest_row(row, tree):
    """make vmtest of ROW's CONFIG= and ARCH= on TREE (its kernel built
    incrementally, through ccache); a dict of what the table shows."""
    t0 = time.monotonic()
    d = os.path.join(OUT, row.name)
    os.makedirs(d, exist_ok=True)
    logp = os.path.join(d, "vmtest.log")
    open(logp, "w").close()
    args = ["make", "--no-print-directory", "vmtest", f"ARCH={row.karch}",
            f"CONFIG={row.config}"]
    if tree != os.path.realpath(os.path.join(BUILD, "linux")):
        args.append(f"KERNEL={tree}")
    rc = run(args, ROOT, logp)
    res = {"row": row, "built": "no", "booted": "no", "suite": "-",
           "new": [], "unwind": "?", "problems": []}
    m = LOGS.search(open(logp, errors="replace").read())
    rundir = m.group(1) if m else None
    if rundir and os.path.exists(os.path.join(rundir, "kernel.config")):
        res["built"] = "yes"
        res["unwind"] = read_config(rundir, "kernel.config").get(
            "CONFIG_UNWIND_USER", "n")
    if rundir and os.path.exists(os.path.join(rundir, "run.json")):
        with open(os.path.join(rundir, "run.json")) as f:
            run_json = json.load(f)
        if run_json.get("boot_seconds") is not None:
            res["booted"] = "yes"
        # The guest's own time and its speed against the reference
        # (tests/test_guest_timeouts.py holds each configuration's host
        # limit to them).
        res["guest_seconds"] = run_json.get("total_seconds")
        res["guest_speed"] = speed(read_text(rundir, "results.log"))[1]
    junit = os.path.join(rundir, "junit.xml") if rundir else ""
    if junit and os.path.exists(junit):
        res["suite"] = suite_result(junit)
    if rc != 0:
        res["problems"].append(f"make vmtest failed (see {logp})")
    if res["unwind"] != "y":
        res["problems"].append(f"CONFIG_UNWIND_USER={res['unwind']}, "
                               "expected y")
    res["seconds"] = time.monotonic() - t0
    return res


def clean_head(path):
    """PATH's commit, None when its tracked files differ from it."""
    if subprocess.run(["git", "-C", path, "diff", "--quiet", "HEAD"],
                      stderr=subprocess.DEVNULL).returncode != 0:
        return None
    return subprocess.run(["git", "-C", path, "rev-parse", "HEAD"],
                          capture_output=True,
                          text=True).stdout.strip() or None


def row_key(row, tree):
    """What ROW's result depends on: the tree's commit and the row, and
    for a guest row the harness's parts it runs (GUEST_PARTS); None when
    either has uncommitted changes (nothing to name it by). A build row
    also names the sources its build reads (kernel_sources): a change
    to perf or the selftests alone keeps its result."""
    tree_head = clean_head(tree)
    if not tree_head:
        return None
    key = {"tree": tree_head, "row": {k: v for k, v in vars(row).items()
                                      if k not in ("why", "resume")},
           "compiler": compiler(row.cross)}
    if getattr(row, "start", None):
        key["start"] = start_digest(row)
        if key["start"] == "missing":
            return None  # a result of no configuration is not kept
    if isinstance(row, GuestRow):
        key["content"] = tree_content(tree, tree_head)
        key["harness"] = harness_trees()
        if not key["harness"]:
            return None
    else:
        key["sources"] = kernel_sources(tree, tree_head)
    return key


def fetch_start(row):
    """Fetch ROW's starting configuration if it is one of those
    fetched when first needed (configs.fetch_missing), before its key;
    a failure is the row's (build_row names it)."""
    failed = configs.fetch_missing(
        row.start, ROOT,
        lambda cmd: log(f"{row.name}: fetching {row.start}: {cmd}")) \
        if row.start else None
    if failed:
        log(f"{row.name}: fetching {row.start} failed: {failed}")


def start_digest(row):
    """The sha256 of ROW's starting configuration ("" for none): the
    path names no version (the machine's linux-config-6.12 moves)."""
    if not row.start:
        return ""
    try:
        with open(os.path.join(ROOT, row.start), "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "missing"


def compiler(cross):
    """The first line of CROSS-gcc --version (the build's compiler), or
    "none"."""
    try:
        out = subprocess.run([f"{cross}gcc", "--version"],
                             capture_output=True, text=True).stdout
    except OSError:
        return "none"
    return out.splitlines()[0] if out else "none"


# What make all of a kernel tree never reads: its documentation, the
# maintainers' list, perf and its library, the selftests (a guest row runs
# perf and the selftests, a build row none of them).
NOT_BUILT = ["Documentation", "MAINTAINERS", "tools/perf", "tools/lib/perf",
             "tools/testing"]


def kernel_sources(tree, commit):
    """The git object names of COMMIT's entries a kernel build reads, as
    one string: NOT_BUILT left out, the directories above them listed
    entry by entry. None when TREE does not have COMMIT."""
    above = {os.path.dirname(p) for p in NOT_BUILT}
    above |= {os.path.dirname(d) for d in above if d}
    entries = []
    for d in sorted(above):
        out = subprocess.run(["git", "-C", tree, "ls-tree", commit] +
                             ([d + "/"] if d else []),
                             capture_output=True, text=True)
        if out.returncode != 0:
            return None
        for line in out.stdout.splitlines():
            meta, path = line.split("\t", 1)
            if path not in above and path not in NOT_BUILT:
                entries.append(f"{path}:{meta.split()[2]}")
    return " ".join(sorted(entries))


# What a guest row runs and judges: the selftests, the guest, its judges
# and kernel builds, what they share (the console's verdict, the shell
# library) and the Makefile whose vmtest recipe runs them; a change to
# docs or to the other checks keeps rows.
GUEST_PARTS = ["selftests", "ci/guest", "ci/judge", "ci/build",
               "ci/console.py", "ci/lib.sh", "Makefile"]


def harness_trees():
    """The git trees of GUEST_PARTS at ROOT's HEAD, None when one has
    uncommitted changes."""
    if subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--",
                       *GUEST_PARTS]).returncode != 0:
        return None
    out = subprocess.run(["git", "-C", ROOT, "rev-parse", *(
        f"HEAD:{p}" for p in GUEST_PARTS)], capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else None


def result_path(row):
    """Where ROW's result is kept (doc/matrix/ROW.json)."""
    return os.path.join(RESULTS, f"{row.name}.json")


def cached(row, key, tree=None):
    """ROW's result of an earlier run with the same KEY, or None. A build
    row's result of another commit counts when the sources its build
    reads are the same (kernel_sources, asked of TREE for a result saved
    without them)."""
    path = result_path(row)
    if key is None or not os.path.exists(path):
        return None
    with open(path) as f:
        saved = json.load(f)
    have = saved.get("key") or {}
    if have.get("compiler", key["compiler"]) != key["compiler"]:
        return None
    if "sources" in key:
        if have.get("row") != key["row"]:
            return None
        sources = have.get("sources")
        if sources is None and tree and have.get("tree"):
            sources = kernel_sources(tree, have["tree"])
        if sources is None or sources != key["sources"]:
            return None
        if have.get("start", "") != key.get("start", ""):
            return None  # another version of Debian's configuration
    elif {k: v for k, v in have.items() if k != "tree"} != \
            {k: v for k, v in key.items() if k != "tree"}:
        return None  # (a guest row: the commit itself may differ)
    return dict(saved["result"], row=row, cached=saved["date"])


def save(row, key, res):
    if key is None:
        return
    os.makedirs(RESULTS, exist_ok=True)
    with open(result_path(row), "w") as f:
        json.dump({"key": key, "date": res["date"],
                   "result": {k: v for k, v in res.items() if k != "row"}},
                  f, indent=1)
        f.write("\n")


def table(results, missing=()):
    """The table's lines; MISSING: Debian's full rows it lacks (named
    below it)."""
    lines = ["| row | ARCH | built | files at W=1 | new W=1 warnings | "
             "UNWIND_USER (expected) | booted | suite | time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        row = r["row"]
        lines.append(
            f"| {row.name} | {row.karch} | {r['built']} | "
            f"{r.get('w1_files', '-')} | "
            f"{len(r['new']) if 'w1_files' in r else '-'} | {r['unwind']} "
            f"({getattr(row, 'unwind', 'y')}) | {r.get('booted', '-')} | "
            f"{r.get('suite', '-')} | {r['seconds'] / 60:.1f} min |")
    if missing:
        lines += ["", "Not in the table, no result for this tree: "
                  + ", ".join(missing) + " (make matrix ROWS=NAME: hours "
                  "each)."]
    return lines


def pick(names, randconfigs, seed):
    rows = list(ROWS)
    rng = random.Random(seed)
    rows += [randconfig_row(rng.randrange(1 << 32))
             for _ in range(randconfigs)]
    rows += GUEST_ROWS
    if not names:
        return rows, True
    out = []
    named = ROWS + DISTRO_ROWS + GUEST_ROWS
    for n in names:
        m = re.fullmatch(r"randconfig-(0x[0-9a-f]+|\d+)", n)
        if m:
            out.append(randconfig_row(int(m.group(1), 0)))
            continue
        found = [r for r in named if r.name == n]
        if not found:
            raise ValueError(f"no row {n}: use one of "
                             + ", ".join(r.name for r in named)
                             + " or randconfig-SEED")
        out += found
    return out, False


def stopped_elsewhere(rows, tree):
    """The rows not among ROWS whose stopped runs left objects (a
    resume.json in OUT/ROW): a randconfig row of another SEED, a Debian
    row not named; each with whether they are of TREE's content (else a
    run of the row starts over: resumed())."""
    names = {r.name for r in rows}
    try:
        dirs = sorted(os.listdir(OUT))
    except OSError:
        return []
    content = tree_content(tree, "HEAD")
    found = []
    for n in dirs:
        if n in names:
            continue
        try:
            with open(os.path.join(OUT, n, "resume.json")) as f:
                key = json.load(f)["key"]
        except OSError:
            continue
        except (ValueError, KeyError, TypeError):
            key = {}
        found.append((n, isinstance(key, dict) and
                      key.get("content") == content))
    return found


def distro_results(tree):
    """For a whole run's table, which does not build Debian's full rows
    (DISTRO_ROWS: hours, run by name): the saved results of those that
    have one for TREE, and the names of those that have none."""
    found, missing = [], []
    for row in DISTRO_ROWS:
        # nothing saved: nothing to fetch Debian's configuration for
        if not os.path.exists(result_path(row)):
            missing.append(row.name)
            continue
        fetch_start(row)
        try:
            r = cached(row, row_key(row, tree), tree)
        except (OSError, ValueError, KeyError, TypeError) as e:
            log(f"{row.name}: its saved result cannot be read: {e!r}")
            r = None
        if r:
            found.append(r)
            for p in r["problems"]:
                print(f"FAIL: {row.name} (saved {r['cached']}): {p}",
                      file=sys.stderr)
        else:
            missing.append(row.name)
    return found, missing


def saved_status(row, tree):
    """ROW's saved result a run would use, and a note; or None and why a
    run would build the row. A cross compiler not installed here (a run
    installs it) is taken to be the one the result names."""
    path = result_path(row)
    if not os.path.exists(path):
        return None, "none"
    if getattr(row, "start", None) and start_digest(row) == "missing":
        return None, f"unknown: {row.start} not fetched (a run fetches it)"
    if not clean_head(tree):
        return None, f"unknown: {tree} is no git tree, or has uncommitted " \
            "changes"
    key = row_key(row, tree)
    if key is None:
        return None, "unknown: uncommitted changes in the harness a guest " \
            "row runs (commit them)"
    with open(path) as f:
        saved = json.load(f)
    if not isinstance(saved, dict) or \
            not isinstance(saved.get("result"), dict) or \
            not isinstance(saved.get("key") or {}, dict):
        return None, "unreadable: not a saved result (a run writes it anew)"
    have = saved.get("key") or {}
    note = ""
    if key["compiler"] == "none" and have.get("compiler"):
        key["compiler"] = have["compiler"]
        note = f"; {row.package} not installed here: counts if a run " \
            f"installs the result's {have['compiler']}"
    r = cached(row, key, tree)
    if r:
        return r, note
    differ = [what for k, what in (
        ("sources", "kernel sources"), ("content", "tree"),
        ("harness", "harness"), ("row", "row definition"),
        ("compiler", "compiler"), ("start", "Debian configuration"))
        if k in key and have.get(k) != key[k]]
    return None, "stale: " + (f"its {', '.join(differ)} changed" if differ
                              else "saved in another form") + \
        " since the saved result (a run builds it)"


def status(rows, tree):
    """make matrix STATUS=1: for each row, whether it has a result of
    TREE and the harness (the one a run would use again), a result of
    another (stale: a run does it again), none, and a stopped run's
    objects to resume. Builds, fetches and locks nothing. Returns the
    lines and whether every row has a current result that passed."""
    lines = ["| row | result | stopped run to resume |", "|---|---|---|"]
    done = True
    for row in rows:
        try:
            r, why = saved_status(row, tree)
        except (OSError, ValueError, KeyError, TypeError,
                AttributeError) as e:
            r, why = None, f"unreadable ({e!r})"
        if r:
            what = f"{'FAILED' if r['problems'] else 'passed'} " \
                f"({r['cached']}, {r['seconds'] / 60:.1f} min){why}"
            done = done and not r["problems"]
        else:
            what, done = why, False
        stopped = "-"
        try:
            with open(os.path.join(OUT, row.name, "resume.json")) as f:
                had = json.load(f)
            now = resume_key(row, tree)
            if now["compiler"] == "none":
                now["compiler"] = had["key"]["compiler"]
            stopped = f"{had['seconds'] / 60:.0f} min built" \
                if had["key"] == now else \
                "of another tree, compiler or configuration (a run " \
                "starts over)"
        except (OSError, ValueError, KeyError, TypeError):
            pass
        lines.append(f"| {row.name} | {what} | {stopped} |")
    return lines, done


# What the kernel's build runs for choices Kconfig cannot check on the
# host (Documentation/process/changes.rst): a configuration may compress
# the kernel with any of these, and BUILTIN_MODULE_RANGES (which a
# randconfig may turn on) runs gawk. make deps has xz; the guests' own
# configurations need none of them.
BUILD_TOOLS = ["bzip2", "gawk", "lz4", "lzop", "zstd"]


def packages_of(rows):
    """The Debian packages ROWS need beyond make deps: their compilers
    (every kind of row) and, for a build row, BUILD_TOOLS."""
    tools = BUILD_TOOLS if any(isinstance(r, Row) for r in rows) else []
    return sorted({r.package for r in rows if r.package} | set(tools))


def main(argv=None):
    exit_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--rows", default="")
    ap.add_argument("--randconfigs", type=int, default=RANDCONFIGS)
    ap.add_argument("--seed", type=int, default=None,
                    help="picks the randconfig seeds (default: the date)")
    ap.add_argument("--doc", default=os.path.join(ROOT, "doc", "matrix.md"))
    ap.add_argument("--fresh", action="store_true",
                    help="run every row again, even one whose tree, row "
                    "and harness are those of its saved result")
    ap.add_argument("--keep-objects", action="store_true",
                    help="keep each row's object directories (gigabytes)")
    ap.add_argument("--status", action="store_true",
                    help="say which rows have a current result, build "
                    "nothing")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else \
        int(datetime.date.today().strftime("%Y%m%d"))
    try:
        rows, whole = pick([n for n in a.rows.split(",") if n],
                           a.randconfigs, seed)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.status:
        if whole:
            log(f"the whole table, randconfig rows of SEED={seed}, and "
                "Debian's full rows (run by name)")
            rows += DISTRO_ROWS
        lines, done = status(rows, os.path.realpath(a.src))
        print("\n".join(lines))
        return 0 if done else 1
    if not lock.held():
        lock.take(log)
    tree = os.path.realpath(a.src)
    if subprocess.run(["git", "-C", tree, "rev-parse", "-q", "--verify",
                       f"{BASE_TAG}^{{commit}}"],
                      capture_output=True).returncode != 0:
        print(f"error: {tree} has no {BASE_TAG} tag: run 'make tree'",
              file=sys.stderr)
        return 2
    cc_cache = os.environ.get("CCACHE", "1") == "1" and \
        subprocess.run(["sh", "-c", "command -v ccache"],
                       capture_output=True).returncode == 0
    if cc_cache:
        os.environ.update(kernel_cc_env())
    packages = packages_of(rows)
    if subprocess.run(["bash", os.path.join(ROOT, "ci", "build", "deps.sh"),
                       *packages]).returncode != 0:
        return 2
    if whole:
        log(f"randconfig rows of SEED={seed}: make matrix SEED={seed} "
            "draws them again (and resumes them)")
    for name, same in stopped_elsewhere(rows, tree):
        if same:
            log(f"{name}: a stopped run's objects in {OUT}/{name}: make "
                f"matrix ROWS={name} resumes it, rm -r frees them")
        else:
            log(f"{name}: a stopped run's objects of another tree in "
                f"{OUT}/{name}: a run of it starts over, rm -r frees them")
    sources = series_files(tree)
    base = base_tree(tree)
    results = []
    for row in rows:
        what = f"make vmtest CONFIG={row.config}" \
            if isinstance(row, GuestRow) else \
            f"{row.target} {row.options or ''}"
        log(f"{row.name}: {what} ARCH={row.karch}"
            f"{' ' + row.why if row.why else ''}")
        if getattr(row, "start", None):
            fetch_start(row)
        key = row_key(row, tree)
        r = None if a.fresh else cached(row, key, tree)
        if r:
            log(f"{row.name}: the result of {r['cached']}, same tree and "
                "row (--fresh runs it again)")
        elif isinstance(row, GuestRow):
            r = run_guest_row(row, tree)
        else:
            r = run_row(row, tree, base, sources, cc_cache, a.keep_objects,
                        a.fresh)
        if not r.get("cached"):
            r["date"] = datetime.datetime.now().isoformat(timespec="minutes")
            save(row, key, r)
        if not isinstance(row, GuestRow):
            finish_row(row, a.keep_objects, ran=not r.get("cached"))
        results.append(r)
        for p in r["problems"]:
            print(f"FAIL: {row.name}: {p}", file=sys.stderr)
        for w in r["new"]:
            print(f"    {w}", file=sys.stderr)
        log(f"{row.name}: built {r['built']}, {len(r['new'])} new W=1 "
            f"warnings, UNWIND_USER={r['unwind']}, booted "
            f"{r.get('booted', '-')}, suite {r.get('suite', '-')}, "
            f"{r['seconds']:.0f} s")
    missing = []
    if whole:
        found, missing = distro_results(tree)
        results += found
    lines = table(results, missing)
    print("\n".join(lines))
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if whole and a.doc:
        write_doc(a.doc, tree, results, lines, seed, a.randconfigs)
    return 1 if any(r["problems"] for r in results) else 0


def base_release(tree):
    """The kernel release of TREE's base (BASE_TAG's Makefile: Debian's
    6.12 moves under the project, and a row's result is of one), or None
    when it has none."""
    p = subprocess.run(["git", "-C", tree, "show", f"{BASE_TAG}:Makefile"],
                       capture_output=True, text=True)
    fields = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION)"
                             r" = *(\S*)$", p.stdout, re.M))
    if p.returncode or not fields.get("VERSION"):
        return None
    return ".".join(fields[k] for k in ("VERSION", "PATCHLEVEL", "SUBLEVEL")
                    if fields.get(k)) + fields.get("EXTRAVERSION", "")


def write_doc(path, tree, results, lines, seed, randconfigs=RANDCONFIGS):
    """doc/matrix.md: the whole table LINES of RESULTS, with when, where
    and how it was made (SEED, RANDCONFIGS: the randconfig rows')."""
    head = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%h %s"],
                          capture_output=True, text=True).stdout.strip()
    release = base_release(tree)
    if release:
        head += f" (the series on Linux {release})"
    dates = sorted(r["date"] for r in results)
    with open(path, "w") as f:
        f.write(DOC.format(date=f"{dates[0]} to {dates[-1]}", head=head,
                           cpus=os.cpu_count(), seed=seed,
                           more="" if randconfigs == RANDCONFIGS else
                           f" RANDCONFIGS={randconfigs}",
                           table="\n".join(lines),
                           minutes=sum(r["seconds"] for r in results) / 60))


DOC = """# make matrix

The series in the configurations and architectures a kernel build bot
tries (`ci/checks/matrix.py`: what each row is and why). Written by `make
matrix`; do not edit by hand.

Rows run {date} (each row's own time below) on {cpus} CPUs, tree at
{head}; {minutes:.0f} min in all. The randconfig rows are SEED={seed}'s:
`make matrix SEED={seed}{more}` makes this table again (each row whose
saved result still holds, doc/matrix/ROW.json's key, uses it).

{table}
"""


if __name__ == "__main__":
    sys.exit(main())
