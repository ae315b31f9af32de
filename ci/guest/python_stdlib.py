"""The stdlib files that a guest Python program's imports load.

usage: python3 -IS python_stdlib.py PYMOD_DIR STDLIB PROGRAM

Run by qemu/mkinitramfs.sh with the interpreter the guest gets, isolated
as the guest runs it. Imports the modules of PROGRAM's top-level
'import X' lines, then perf (from PYMOD_DIR), and prints one a line the
file and the cached file under STDLIB of every module loaded (not frozen,
not built in), then STDLIB/os.py, the landmark Python finds its prefix by.

It imports nothing of its own: whatever it imported would be listed, and
packed into the initramfs, too.
"""
import sys

FIRST = "abcdefghijklmnopqrstuvwxyz_"
NAME = FIRST + "0123456789"


def program_imports(path):
    """X of every line that is exactly 'import X', X a lower-case name."""
    mods = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            name = line[len("import "):]
            if line.startswith("import ") and name[:1] in FIRST and \
                    name and all(c in NAME for c in name):
                mods.append(name)
    return mods


def stdlib_files(stdlib):
    out = []
    for m in list(sys.modules.values()):
        s = getattr(m, "__spec__", None)
        if s and s.origin and s.origin.startswith(stdlib + "/"):
            out.append(s.origin)
            if s.cached:
                out.append(s.cached)
    return out + [stdlib + "/os.py"]


def main(argv):
    pymod, stdlib, program = argv
    sys.path.insert(0, pymod)
    for m in program_imports(program) + ["perf"]:
        __import__(m)
    for f in stdlib_files(stdlib):
        print(f)


if __name__ == "__main__":
    main(sys.argv[1:])
