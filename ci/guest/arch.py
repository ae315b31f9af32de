#!/usr/bin/env python3
"""Which guest architecture a run is for: ARCH= of make, VMTEST_ARCH of
the scripts. Each one's details are data in qemu/<name>.py (x86_64.py,
arm64.py); this file only maps a name to that module.

usage: guest_arch.py NAME            print the canonical name, or say why
                                     not (exit 2)
       guest_arch.py NAME SETTING    print one setting of that module (a
                                     list as words, a dict as key<TAB>value
                                     lines, a bool as yes or nothing)
"""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Canonical name -> the names make and the kernel's own ARCH= use for it.
KNOWN = {
    "x86_64": ("x86_64", "x86"),
    "arm64": ("arm64", "aarch64"),
}
DEFAULT = "x86_64"


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
    return importlib.import_module(canonical(name))


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
        print(f"error: qemu/{mod.NAME}.py has no setting {argv[1]}",
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
