#!/usr/bin/env python3
"""The guest kernel configurations: which fragments of ci/guest/config/
make each CONFIG= on each ARCH=. The one table that make (kernel, vmtest,
sparse, bisect-build), ci/checks/kunit/run.sh and ci/build/kconfig.py ask.

usage: python3 -m ci.build.configs make ARCH CONFIG
           make's assignments for that pair (an unknown ARCH or CONFIG:
           the error on stderr, exit 2)
       python3 -m ci.build.configs fragments CONFIG [--if-possible]
           ci/build/kconfig.py's fragment arguments ($VMTEST_ARCH's)
       python3 -m ci.build.configs extra CONFIG
           the fragments CONFIG adds to normal (kunit.py --kunitconfig=)
"""
import os
import subprocess
import sys

from ci.guest import arch as guest_arch

DIR = "ci/guest/config"
# The options the series adds: ci/build/kconfig.py's --series (every one
# must survive olddefconfig), or --series-if-possible for a tree that may
# define an option it cannot enable yet (a commit in the middle of the
# series, the base) and for an architecture that says so (SERIES_MODE).
SERIES = "series.config"

# CONFIG= -> (the fragments after the common ones, make's default
# VM_TIMEOUT in seconds, what it is for). A VM_TIMEOUT holds a passing
# run plus the longest program timeout of selftests/settings, so that a
# hang is killed and named by init first (tests/test_guest_timeouts.py,
# in the reference guest's seconds: rt 307 s + 360 s, 2026-12-01).
# "{series}" stands for the series' fragment with its mode; every
# configuration starts with guest.config, the architecture's own fragment
# and kunit-at-boot.config.
CONFIGS = {
    "normal": (["{series}"], 900, "base + the series"),
    # stress.config's kmemleak is built in but off unless the command line
    # says kmemleak=on, which only make stress's boots do: the debug
    # kernel is also the stress kernel (one build less in make check).
    "debug": (["{series}", "debug-checks.config", "stress.config"], 1500,
              "+ KASAN, lockdep, atomic-sleep checks; kmemleak built in"),
    "stress": ([], 600, "the debug kernel booted with kmemleak on, for "
               "make stress"),
    "stress-rt": ([], 600, "the rt-debug kernel booted with kmemleak on, for "
                  "make stress-rt"),
    "kcsan": (["{series}", "kcsan.config", "stress.config"], 900,
              "KCSAN + kmemleak, for make stress-kcsan"),
    # The real-time kernel (Debian 13's -rt flavours), and with the debug
    # checks (lockdep finds sleeping locks taken in atomic context).
    "rt": (["{series}", "rt.config"], 900, "base + the series, PREEMPT_RT"),
    "rt-debug": (["{series}", "debug-checks.config", "stress.config",
                  "rt.config"], 1500,
                 "rt + KASAN, lockdep, atomic-sleep checks; kmemleak built in"),
    # Instead of series.config: the series without the user unwinder.
    "nounwind": (["nounwind.config"], 900,
                 "the series without UNWIND_USER"),
    # Debian's own configuration of the tree instead of tinyconfig and
    # guest.config (BASES): its built-in part, modules off.
    "debian": (["debian-guest.config", "{series}"], 900,
               "Debian's own configuration, built-in part, + the series"),
    "debian-rt": (["debian-guest.config", "{series}"], 900,
                  "Debian's own -rt configuration, built-in part, + the "
                  "series"),
}

# CONFIG= -> the configuration whose kernel (and kobj directory) it boots:
# make stress runs the debug kernel with kmemleak switched on at boot.
KERNEL_OF = {"stress": "debug", "stress-rt": "rt-debug"}


def kernel_of(config):
    """The configuration whose kernel CONFIG boots (itself mostly)."""
    return KERNEL_OF.get(config, config)


# CONFIG= -> ARCH= -> the configuration it starts from instead of
# tinyconfig and guest.config: Debian's, from linux-config-6.12. amd64's
# come with the machine's package (make deps), the same version as
# linux-source-6.12; arm64's with the same package of Debian 13 for arm64,
# fetched by kconfig.py into build/ when first needed
# (ci/build/fetch-deb.sh: never installed).
DEBIAN_CONFIGS = "/usr/src/linux-config-6.12"
FETCHED = {"arm64": ("trixie", "linux-config-6.12",
                     "build/debcfg/trixie-arm64")}
ARM64_CONFIGS = f"{FETCHED['arm64'][2]}{DEBIAN_CONFIGS}"
BASES = {
    "debian": {"x86_64": f"{DEBIAN_CONFIGS}/config.amd64_none_amd64.xz",
               "arm64": f"{ARM64_CONFIGS}/config.arm64_none_arm64.xz"},
    "debian-rt": {"x86_64": f"{DEBIAN_CONFIGS}/config.amd64_rt_amd64.xz",
                  "arm64": f"{ARM64_CONFIGS}/config.arm64_rt_arm64.xz"},
}


def fetch_base(path):
    """Fetch the package holding PATH, one of BASES' fetched files: the
    fetch-deb.sh command line, or None for a file make deps installs."""
    for debarch, (suite, package, dest) in FETCHED.items():
        if path.startswith(dest + "/"):
            return ["bash", "ci/build/fetch-deb.sh", "--arch", debarch,
                    suite, dest, package]
    return None


def fetch_missing(path, root=".", say=None):
    """Fetch PATH (under ROOT) when it is one of BASES' fetched files and
    missing, calling SAY(command line) first: None when it is there or
    fetched, or is not fetched here (a missing one is then the caller's
    error); else the command line that failed."""
    fetch = fetch_base(path)
    if not fetch or os.path.exists(os.path.join(root, path)):
        return None
    if say:
        say(" ".join(fetch))
    if subprocess.run(fetch, cwd=root, stdout=subprocess.DEVNULL).returncode:
        return " ".join(fetch)
    return None


def check(config):
    """CONFIG's row; ValueError saying which names exist."""
    if config not in CONFIGS:
        raise ValueError(f"CONFIG={config}: use "
                         + ", ".join(f"CONFIG={c}" for c in CONFIGS))
    return CONFIGS[config]


def fragments(config, arch=None, if_possible=False):
    """ci/build/kconfig.py's arguments for CONFIG on ARCH (a name, or
    None for $VMTEST_ARCH): fragment paths, the series' one behind its
    mode switch."""
    mod = guest_arch.load(arch)
    mode = "--series-if-possible" if if_possible else mod.SERIES_MODE
    check(config)
    config = kernel_of(config)
    if config in BASES:
        if mod.NAME not in BASES[config]:
            raise ValueError(f"CONFIG={config}: only for ARCH="
                             + ", ".join(BASES[config]))
        # A distribution's configuration has what guest.config asks for;
        # it would also force its NR_CPUS=8 on the distribution's 8192.
        out = ["--base", BASES[config][mod.NAME]]
    else:
        out = [f"{DIR}/guest.config"]
    out += [mod.GUEST_CONFIG, f"{DIR}/kunit-at-boot.config"]
    for f in check(config)[0]:
        out += [mode, f"{DIR}/{SERIES}"] if f == "{series}" else [f"{DIR}/{f}"]
    return out


def extra(config):
    """The fragments CONFIG adds to normal's, as paths."""
    base = set(CONFIGS["normal"][0])
    check(config)
    return [f"{DIR}/{f}" for f in CONFIGS[kernel_of(config)][0]
            if f not in base]


def make_vars(arch, config):
    """make's assignments for ARCH and CONFIG: what the Makefile derives
    from them, asked in one call."""
    mod = guest_arch.load(arch)
    timeout = check(config)[1]
    fragments(config, arch)  # a CONFIG= this ARCH= has no base for
    return [f"ARCH_NAME := {mod.NAME}",
            f"ARCH_CMAKE := {' '.join(mod.CMAKE_ARGS)}",
            f"ARCH_PY := {'yes' if mod.PACK_PYTHON else ''}",
            f"ARCH_SMP := {mod.SMP}",
            f"CONFIG_KERNEL := {kernel_of(config)}",
            f"CONFIG_VM_TIMEOUT := {timeout}"]


def main(argv):
    try:
        if len(argv) == 3 and argv[0] == "make":
            print("\n".join(make_vars(argv[1], argv[2])))
        elif len(argv) in (2, 3) and argv[0] == "fragments" and \
                argv[2:] in ([], ["--if-possible"]):
            print("\n".join(fragments(argv[1], if_possible=len(argv) == 3)))
        elif len(argv) == 2 and argv[0] == "extra":
            print("\n".join(extra(argv[1])))
        else:
            print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
            return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
