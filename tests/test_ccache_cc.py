"""ci/build/ccache-cc, the CC= of kernel builds: ccache's hash does not see
a file pulled in with .incbin, so what may use it must not come from the
cache (a fresh clone booted the kernel an earlier piggy.o held)."""
import os
import shutil
import subprocess

import pytest

from ci.checks import matrix

ROOT = matrix.ROOT
WRAPPER = os.path.join(ROOT, "ci", "build", "ccache-cc")

need_ccache = pytest.mark.skipif(shutil.which("ccache") is None,
                                 reason="no ccache (make deps installs it)")


@pytest.fixture
def kernel_cc(tmp_path, monkeypatch):
    """use_kernel_cc's CC= and environment (ci/build/lib.sh, the guest
    kernels' one place), with a cache of the test's own and none of the
    caller's ccache settings (CCACHE=0, CCACHE_DISABLE, CCACHE_RECACHE)."""
    for k in list(os.environ):
        if k == "CCACHE" or k.startswith("CCACHE_"):
            monkeypatch.delenv(k)
    (tmp_path / "ccache.conf").write_text("")
    r = subprocess.run(
        ["bash", "-c", '. "$1" && use_kernel_cc && printf %s "$KCC"', "-",
         os.path.join(ROOT, "ci", "build", "lib.sh")],
        capture_output=True, text=True, check=True)
    env = dict(os.environ, **matrix.kernel_cc_env(),
               CCACHE_DIR=str(tmp_path / "cache"),
               CCACHE_CONFIGPATH=str(tmp_path / "ccache.conf"))
    return r.stdout.split(), env


def compile_(cc, env, cwd, obj, src):
    # As kbuild does: -Wp,-MMD for the dependencies ccache's depend mode reads
    subprocess.run([*cc, f"-Wp,-MMD,.{obj}.d", "-c", "-o", obj, src],
                   cwd=cwd, env=env, check=True)
    with open(os.path.join(cwd, obj), "rb") as f:
        return f.read()


def stats(env):
    out = subprocess.run(["ccache", "--print-stats"], env=env,
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split("\t") for line in out.splitlines() if "\t" in line)


# x86's generated piggy.S: sizes that stay the same, the kernel by .incbin;
# riscv's compat_vdso.S: the .incbin in a file it includes; kernel/configs.c:
# in inline asm. The source named relative to the build directory, as for
# generated files, or by its absolute path, as for the source tree's.
SOURCES = {
    "piggy.S": {"piggy.S": '.section ".rodata..compressed","a"\n'
                           '.incbin "blob"\n'},
    "included.S": {"included.S": '#include "inner.S"\n',
                   "inner.S": '.section .rodata\n.incbin "blob"\n'},
    "configs.c": {"configs.c": 'asm(".pushsection .rodata\\n"\n'
                               '    ".incbin \\"blob\\"\\n"\n'
                               '    ".popsection\\n");\n'},
}


@need_ccache
@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
@pytest.mark.parametrize("name", SOURCES)
def test_what_may_use_incbin_gets_the_file_as_it_is_now(kernel_cc, tmp_path,
                                                        name, absolute):
    cc, env = kernel_cc
    assert cc[0] == WRAPPER
    src = tmp_path / "src"
    src.mkdir()
    for f, text in SOURCES[name].items():
        (src / f).write_text(text)
    path = str(src / name) if absolute else name
    for blob in (b"first kernel", b"other kernel"):
        (src / "blob").write_bytes(blob)
        assert blob in compile_(cc, env, src, "out.o", path)


@need_ccache
def test_other_sources_still_come_from_the_cache(kernel_cc, tmp_path):
    cc, env = kernel_cc
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.c").write_text("int a(void) { return 42; }\n")
    first = compile_(cc, env, src, "a.o", "a.c")
    os.unlink(src / "a.o")
    assert compile_(cc, env, src, "a.o", "a.c") == first
    s = stats(env)
    assert int(s.get("direct_cache_hit", 0)) == 1, s
    assert int(s.get("cache_miss", 0)) == 1, s


def test_the_matrix_builds_through_it():
    row = matrix.ROWS[0]
    cc = [a for a in matrix.make_args(row, "/obj", True) if a.startswith("CC=")]
    assert cc == [f"CC={WRAPPER} {row.cross}gcc"]
