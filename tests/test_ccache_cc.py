"""ci/build/ccache-cc, the CC= of kernel builds: ccache's hash does not see
a file pulled in with .incbin, so such sources must not come from the cache
(a fresh clone booted the kernel an earlier piggy.o held)."""
import os
import shutil
import subprocess

import pytest

from ci.checks import matrix

ROOT = matrix.ROOT

pytestmark = pytest.mark.skipif(shutil.which("ccache") is None,
                                reason="no ccache (make deps installs it)")


def kernel_cc(tmp_path):
    """use_kernel_cc's CC= and environment (ci/build/lib.sh, the guest
    kernels' one place), with a cache of the test's own."""
    r = subprocess.run(
        ["bash", "-c", '. "$1" && use_kernel_cc && printf %s "$KCC"', "-",
         os.path.join(ROOT, "ci", "build", "lib.sh")],
        capture_output=True, text=True, check=True)
    env = dict(os.environ, **matrix.kernel_cc_env(),
               CCACHE_DIR=str(tmp_path / "cache"))
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


def test_a_source_with_incbin_gets_the_file_as_it_is_now(tmp_path):
    cc, env = kernel_cc(tmp_path)
    assert cc[0] == os.path.join(ROOT, "ci", "build", "ccache-cc")
    src = tmp_path / "src"
    src.mkdir()
    # x86's piggy.S: sizes that stay the same, the kernel by .incbin
    (src / "piggy.S").write_text('.section ".rodata..compressed","a"\n'
                                 '.incbin "vmlinux.bin.xz"\n')
    for blob in (b"first kernel", b"other kernel"):
        (src / "vmlinux.bin.xz").write_bytes(blob)
        assert blob in compile_(cc, env, src, "piggy.o", "piggy.S")


def test_other_sources_still_come_from_the_cache(tmp_path):
    cc, env = kernel_cc(tmp_path)
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
    assert cc == [f"CC={os.path.join(ROOT, 'ci', 'build', 'ccache-cc')} "
                  f"{row.cross}gcc"]
