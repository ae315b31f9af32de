"""The stdlib files that a guest Python program's imports load.

usage: python3 -IS ci/guest/python_stdlib.py PYMOD_DIR STDLIB PROGRAM

Run by ci/guest/mkinitramfs.sh with the interpreter the guest gets, isolated
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


def import_from(name, directory):
    """Import NAME from DIRECTORY only (perf.so, which the guest finds in
    lib-dynload), through the finders the interpreter already has, so that
    the search path of the program's own imports stays the guest's."""
    for finder in sys.meta_path:
        spec = finder.find_spec(name, [directory])
        if spec:
            # An extension module is made by its loader; a source one
            # (the tests' stand-in for perf.so) is a plain module.
            module = spec.loader.create_module(spec) or type(sys)(name)
            module.__spec__, module.__loader__ = spec, spec.loader
            module.__file__ = spec.origin
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module
    raise ImportError(f"no module {name} in {directory}")


def main(argv):
    pymod, stdlib, program = argv
    for m in program_imports(program):
        __import__(m)
    import_from("perf", pymod)
    for f in stdlib_files(stdlib):
        print(f)


if __name__ == "__main__":
    main(sys.argv[1:])
