#!/usr/bin/env python3
"""Make a guest .config from fragments and check that every option survived.

usage: python3 -m ci.build.kconfig --src KERNEL --out OBJDIR [--config NAME [--if-possible]]
           [--base CONFIG] [--series FRAGMENT]... [--off OPTION]... [FRAGMENT...]

The config is tinyconfig (or --base, a whole .config such as a
distribution's, .xz or plain, its modules switched off) plus the
fragments (later fragments win), resolved by Kconfig in one allnoconfig
pass. Kconfig silently drops an option whose
dependencies are not met, so afterwards every requested option is looked up
in the final .config; any that did not survive is named and the exit code
is 2. A --series fragment holds options that the patch series adds: an
option there that the tree's Kconfig does not define (an unpatched tree)
is left out with a note instead of failing, so the same guest config
serves the base kernel, ours, and an upstream kernel that has only some
of the symbols. An option the tree defines is verified like any other.
OBJDIR/.config is replaced only when its content changes, so kbuild
stays incremental.
"""
import argparse
import lzma
import os
import re
import subprocess
import sys

from ci.build import configs
from ci.guest import arch as guest_arch

SYMBOL = re.compile(r"^\s*(?:menu)?config\s+(\w+)\s*$")
SET = re.compile(r"^(CONFIG_\w+)=(.*)$")
UNSET = re.compile(r"^# (CONFIG_\w+) is not set$")


def parse(lines):
    """Map CONFIG_X -> value ('n' for 'is not set'); later lines win."""
    opts = {}
    for line in lines:
        line = line.strip()
        m = SET.match(line)
        if m:
            opts[m.group(1)] = m.group(2)
            continue
        m = UNSET.match(line)
        if m:
            opts[m.group(1)] = "n"
    return opts


def base_lines(path):
    """A whole .config (xz-compressed or not) as fragment lines, every
    module (=m) turned off: the guest boots no modules."""
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    return [f"# {line[:-2]} is not set" if line.endswith("=m") else line
            for line in lines]


def kconfig_files(src):
    """The tree's Kconfig files: from git's index when the tree is a git
    repo (walking ~80k files took 6 s of every warm build), else a walk."""
    try:
        out = subprocess.run(["git", "-C", src, "ls-files", "-co",
                              "--exclude-standard", "*Kconfig*"],
                             capture_output=True, text=True, check=True)
        files = [os.path.join(src, f) for f in out.stdout.splitlines()
                 if os.path.basename(f).startswith("Kconfig")]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for top, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        files += [os.path.join(top, f) for f in names
                  if f.startswith("Kconfig")]
    return files


def defined_symbols(src):
    """Every CONFIG_ name some Kconfig file of the tree defines."""
    names = set()
    for path in kconfig_files(src):
        if not os.path.isfile(path):
            continue  # deleted in the work tree, still in the index
        with open(path, errors="replace") as fh:
            for line in fh:
                m = SYMBOL.match(line)
                if m:
                    names.add("CONFIG_" + m.group(1))
    return names


def missing(requested, final):
    """Requested options whose final value differs: [(name, want, got)]."""
    bad = []
    for name, want in requested.items():
        got = final.get(name, "n")
        if want != got:
            bad.append((name, want, got))
    return bad


def describe(bad):
    out = []
    for name, want, got in bad:
        w = "not set" if want == "n" else want
        g = "not set" if got == "n" else got
        out.append(f"  {name}: asked for {w}, .config has {g}")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--make", default="make")
    ap.add_argument("--series", action="append", default=[],
                    help="fragment of options the series adds (see above)")
    ap.add_argument("--series-if-possible", action="append", default=[],
                    help="like --series, but an option that does not "
                    "survive is only noted (a commit in the middle of the "
                    "series may define a symbol it cannot enable yet)")
    ap.add_argument("--off", action="append", default=[],
                    help="an option turned off after every fragment "
                    "(make's KCONFIG_OFF=): verified off, and said")
    ap.add_argument("--arch", default=os.environ.get("VMTEST_ARCH", ""),
                    help="guest architecture (ci/guest/arch.py): its "
                    "tinyconfig fragments and make arguments")
    ap.add_argument("--config",
                    help="a CONFIG= of the table (ci/build/configs.py): "
                    "its fragments, before any given")
    ap.add_argument("--if-possible", action="store_true",
                    help="--config's series fragment as "
                    "--series-if-possible (bisect-build, sparse)")
    ap.add_argument("--base",
                    help="a whole .config to start from instead of "
                    "tinyconfig, modules off (not verified: the fragments' "
                    "options are)")
    ap.add_argument("fragments", nargs="*")
    a = ap.parse_intermixed_args(argv)
    try:
        arch = guest_arch.load(a.arch)
        if a.config:
            # The table's fragments, parsed as the same positional and
            # --series arguments.
            table = argparse.ArgumentParser(add_help=False)
            for opt in ("--series", "--series-if-possible"):
                table.add_argument(opt, action="append", default=[])
            table.add_argument("--base")
            table.add_argument("fragments", nargs="*")
            b = table.parse_intermixed_args(
                configs.fragments(a.config, a.arch, a.if_possible))
            a.base = a.base or b.base
            a.fragments = b.fragments + a.fragments
            a.series = b.series + a.series
            a.series_if_possible = b.series_if_possible + a.series_if_possible
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not a.fragments:
        ap.error("no fragments: give --config NAME or FRAGMENT...")

    for f in a.fragments + a.series + a.series_if_possible:
        if not os.path.exists(f):
            print(f"error: config fragment {f} not found", file=sys.stderr)
            return 2
    failed = configs.fetch_missing(a.base) if a.base else None
    if failed:
        print(f"error: fetching {a.base} failed: {failed}", file=sys.stderr)
        return 2
    if a.base and not os.path.exists(a.base):
        print(f"error: base configuration {a.base} not found (Debian's come "
              "with linux-config-6.12: run 'make deps')", file=sys.stderr)
        return 2

    text = []
    if a.base:
        text += base_lines(a.base)
    for f in [] if a.base else arch.TINY_CONFIGS:
        path = os.path.join(a.src, f)
        if os.path.exists(path):
            text += open(path).read().splitlines()
    requested = {}
    for f in a.fragments:
        lines = open(f).read().splitlines()
        text += lines
        requested.update(parse(lines))
    optional = {}
    if a.series or a.series_if_possible:
        known = defined_symbols(a.src)
        for f in a.series + a.series_if_possible:
            opts = parse(open(f).read().splitlines())
            absent = sorted(n for n in opts if n not in known)
            if absent:
                print(f"kconfig: {a.src} does not define {', '.join(absent)}"
                      f" (from {f}): left out")
            into = requested if f in a.series else optional
            for name, val in opts.items():
                if name in known:
                    into[name] = val
                    text.append(f"{name}={val}" if val != "n"
                                else f"# {name} is not set")

    for name in a.off:
        name = name if name.startswith("CONFIG_") else f"CONFIG_{name}"
        print(f"kconfig: {name} turned off (KCONFIG_OFF)")
        text.append(f"# {name} is not set")
        requested[name] = "n"
        optional.pop(name, None)

    os.makedirs(a.out, exist_ok=True)
    allconfig = os.path.join(a.out, "vmtest.allconfig")
    new = "vmtest.config.new"
    with open(allconfig, "w") as fh:
        fh.write("\n".join(text) + "\n")
    cmd = [a.make, "-s", "-C", a.src, *arch.MAKE_ARGS,
           f"O={os.path.abspath(a.out)}",
           f"KCONFIG_ALLCONFIG={os.path.abspath(allconfig)}",
           f"KCONFIG_CONFIG={new}", "allnoconfig"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode:
        print(r.stdout, file=sys.stderr)
        print("error: Kconfig failed (above)", file=sys.stderr)
        return 2
    newpath = os.path.join(a.out, new)
    final = parse(open(newpath).read().splitlines())
    for name, want, got in missing(optional, final):
        print(f"kconfig: {name} cannot be {want} in this tree yet "
              f"(.config: {got}): left as it is")
    bad = missing(requested, final)
    if bad:
        print("error: these options did not survive Kconfig (check their "
              "dependencies in the fragments):\n" + describe(bad),
              file=sys.stderr)
        os.unlink(newpath)
        return 2
    cur = os.path.join(a.out, ".config")
    if os.path.exists(cur) and open(cur).read() == open(newpath).read():
        os.unlink(newpath)
        print(f"kconfig: {len(requested)} options verified, .config unchanged")
    else:
        os.replace(newpath, cur)
        print(f"kconfig: {len(requested)} options verified, .config written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
