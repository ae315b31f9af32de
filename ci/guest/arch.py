#!/usr/bin/env python3
"""Which guest architecture a run is for: ARCH= of make, VMTEST_ARCH of
the scripts. Each one's details are data in ci/guest/<name>.py (x86_64.py,
arm64.py); this file only maps a name to that module.

usage: python3 -m ci.guest.arch NAME            print the canonical name, or say why
                                     not (exit 2)
       python3 -m ci.guest.arch NAME SETTING    print one setting of that module (a
                                     list as words, a dict as key<TAB>value
                                     lines, a bool as yes or nothing)
"""
import importlib
import os
import sys

# Canonical name -> the names make and the kernel's own ARCH= use for it.
KNOWN = {
    "x86_64": ("x86_64", "x86"),
    "arm64": ("arm64", "aarch64"),
}
DEFAULT = "x86_64"

# The shape every architecture's module declares: each setting and its
# type, nothing else (tests/test_arch.py checks both modules against it),
# so a third architecture is one more file of the same shape.
SHAPE = {
    "NAME": str, "QEMU": str, "KERNEL_IMAGE": str, "MAKE_TARGET": str,
    "MAKE_ARGS": list, "CROSS_COMPILE": str, "TINY_CONFIGS": list,
    "GUEST_CONFIG": str, "CMAKE_ARGS": list, "SERIES_MODE": str,
    "SMP": int, "CMDLINE": str, "PROBE_CMDLINE": str, "KVM_HOSTS": list,
    "KVM_ARGS": list, "TCG_ARGS": list, "ONE_THREAD_CONFIGS": list,
    "SERIAL": list, "RESULTS_TTY": str,
    "BUSYBOX_DEB": str, "PACK_PYTHON": bool, "LEFT_OUT": dict,
    "channel_args": type(lambda: None),
}


def shape_problems(mod):
    """What MOD, an architecture's module, lacks, has of another type, or
    has that SHAPE does not declare."""
    have = {k: v for k, v in vars(mod).items() if not k.startswith("_")}
    out = [f"no {k}" for k in SHAPE if k not in have]
    out += [f"{k} is a {type(v).__name__}, not a {SHAPE[k].__name__}"
            for k, v in have.items() if k in SHAPE
            and not isinstance(v, SHAPE[k])]
    out += [f"{k} is not in ci/guest/arch.py's SHAPE" for k in have
            if k not in SHAPE]
    return out


def canonical(name):
    """The canonical name of ARCH=name; ValueError saying what to use."""
    name = (name or DEFAULT).strip()
    for arch, aliases in KNOWN.items():
        if name in aliases:
            return arch
    raise ValueError(f"ARCH={name}: unknown guest architecture; use "
                     + " or ".join(f"ARCH={a}" for a in KNOWN))


def load(name=None):
    """The module of the architecture name (default: $VMTEST_ARCH, else
    x86_64)."""
    if name is None:
        name = os.environ.get("VMTEST_ARCH", "")
    return importlib.import_module(f"ci.guest.{canonical(name)}")


def main(argv):
    if len(argv) not in (1, 2):
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    try:
        mod = load(argv[0])
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if len(argv) == 1:
        print(mod.NAME)
        return 0
    val = getattr(mod, argv[1], None)
    if val is None:
        print(f"error: ci/guest/{mod.NAME}.py has no setting {argv[1]}",
              file=sys.stderr)
        return 2
    if isinstance(val, dict):  # one "key<TAB>value" line each
        for k, v in val.items():
            print(f"{k}\t{v}")
    elif isinstance(val, (list, tuple)):
        print(" ".join(val))
    elif isinstance(val, bool):
        print("yes" if val else "")
    else:
        print(val)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
