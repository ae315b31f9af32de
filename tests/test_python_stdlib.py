"""ci/guest/python_stdlib.py: the stdlib files the guest's perf_python_test.py
needs, found by importing what it imports on the host."""
import os
import subprocess
import sys
import sysconfig

from ci.guest import python_stdlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "ci", "guest", "python_stdlib.py")
STDLIB = sysconfig.get_path("stdlib")
# What the interpreter loads before any program: the same as -IS -c.
STARTUP = """import sys
for m in list(sys.modules.values()):
    s = getattr(m, '__spec__', None)
    if s and s.origin and s.origin.startswith(sys.argv[1] + '/'):
        print(s.origin)
        if s.cached: print(s.cached)
print(sys.argv[1] + '/os.py')
"""


def run(tmp_path, program):
    (tmp_path / "mod").mkdir(exist_ok=True)
    (tmp_path / "mod" / "perf.py").write_text("PERF = 1\n")
    (tmp_path / "prog.py").write_text(program)
    r = subprocess.run([sys.executable, "-IS", SCRIPT, str(tmp_path / "mod"),
                        STDLIB, str(tmp_path / "prog.py")],
                       capture_output=True, text=True, check=True,
                       env=dict(os.environ, LC_ALL="C"))
    return r.stdout.splitlines()


def test_only_exact_top_level_import_lines(tmp_path):
    p = tmp_path / "t.py"
    p.write_text("import os\nimport sys\nimport a1_b\n  import indented\n"
                 "import os.path\nimport json  # why\nfrom x import y\n"
                 "import Upper\nimport 1x\nimport \nimport colorsys")
    assert python_stdlib.program_imports(p) == ["os", "sys", "a1_b",
                                                "colorsys"]


def test_the_script_adds_no_file_of_its_own(tmp_path):
    startup = subprocess.run([sys.executable, "-IS", "-c", STARTUP, STDLIB],
                             capture_output=True, text=True, check=True,
                             env=dict(os.environ, LC_ALL="C")).stdout
    assert sorted(run(tmp_path, "print(1)\n")) == \
        sorted(startup.splitlines())


def test_the_program_s_imports_are_listed(tmp_path):
    files = run(tmp_path, "import colorsys\n")
    assert os.path.join(STDLIB, "colorsys.py") in files
    assert files[-1] == os.path.join(STDLIB, "os.py")
    assert not [f for f in files if "perf" in f]
