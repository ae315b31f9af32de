"""ci/guest/mkinitramfs.sh: what the guest gets is what was named."""
import gzip
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "ci", "guest", "mkinitramfs.sh")
KSRC = os.path.join(ROOT, "build", "linux")

pytestmark = pytest.mark.skipif(
    not os.access("/bin/busybox", os.X_OK) or not shutil.which("strip") or
    not (os.path.exists(os.path.join(ROOT, "build", "tools", "gen_init_cpio")) or
         os.path.exists(os.path.join(KSRC, "usr", "gen_init_cpio.c"))),
    reason="needs busybox-static, strip and gen_init_cpio (make deps tree)")


def cpio_files(path):
    """name -> data of the regular files of a gzipped newc archive."""
    data, files, at = gzip.open(path).read(), {}, 0
    while at + 110 <= len(data):
        h = data[at:at + 110]
        assert h[:6] == b"070701", f"no newc header at {at}"
        mode, size, namesize = (int(h[6 + 8 * i:14 + 8 * i], 16) for i in (1, 6, 11))
        name = data[at + 110:at + 110 + namesize - 1].decode()
        at = (at + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            break
        if mode & 0o170000 == 0o100000:
            files[name] = data[at:at + size]
        at = (at + size + 3) & ~3
    return files


def stripped(tmp_path, src):
    out = str(tmp_path / ("stripped-" + os.path.basename(src)))
    subprocess.run(["strip", "--strip-debug", "-o", out, src], check=True)
    return open(out, "rb").read()


def test_perf_and_upstream_perf_of_one_basename_stay_apart(tmp_path):
    """Both perfs are built as 'perf': staged under their host name, one
    copy served as both, and the guest's /bin/perf was upstream's perf
    (PerfTool.SamplesWithoutTheirRecordAreKeptAndCounted then saw no
    count of unmerged samples: upstream perf prints none)."""
    ours, upstream = tmp_path / "ours", tmp_path / "upstream"
    tests = tmp_path / "selftests"
    for d in (ours, upstream, tests):
        d.mkdir()
    # Two different ELF files, each named perf, that strip accepts.
    shutil.copy("/bin/true", ours / "perf")
    shutil.copy("/bin/false", upstream / "perf")
    shutil.copy("/bin/true", tests / "perf")  # a selftest of that name too
    out = str(tmp_path / "initramfs.cpio.gz")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PERF_SHELL", "PERF_PYTHON")}
    env.update(PERF_BIN=str(ours / "perf"), PERF_UPSTREAM_BIN=str(upstream / "perf"))
    subprocess.run(["bash", SCRIPT, out, str(tests), KSRC], env=env, check=True,
                   capture_output=True, timeout=300)
    files = cpio_files(out)
    assert files["bin/perf"] == stripped(tmp_path, "/bin/true")
    assert files["bin/perf-upstream"] == stripped(tmp_path, "/bin/false")
    assert files["selftests/perf"] == stripped(tmp_path, "/bin/true")


def cpio_entries(path):
    """name -> (mode, data) of every entry of a gzipped newc archive (a
    symbolic link's data is its target)."""
    data, out, at = gzip.open(path).read(), {}, 0
    while at + 110 <= len(data):
        h = data[at:at + 110]
        mode, size, namesize = (int(h[6 + 8 * i:14 + 8 * i], 16) for i in (1, 6, 11))
        name = data[at + 110:at + 110 + namesize - 1].decode()
        at = (at + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            break
        out[name] = (mode, data[at:at + size])
        at = (at + size + 3) & ~3
    return out


def test_realstacks_tree_is_packed_as_it_is(tmp_path):
    """make realstacks' tree (REALSTACKS_DIR) goes under /realstacks whole:
    every file byte for byte with its mode (never stripped: .sframe and
    symbols stay), directories, symbolic links."""
    rs, tests = tmp_path / "guest", tmp_path / "selftests"
    (rs / "fp").mkdir(parents=True)
    tests.mkdir()
    (rs / "run.sh").write_text("#!/bin/sh\n")
    (rs / "run.sh").chmod(0o755)
    shutil.copy("/bin/true", rs / "fp" / "prog")
    (rs / "input.txt").write_text("data\n")
    (rs / "input.txt").chmod(0o644)
    os.symlink("fp/prog", rs / "link")
    out = str(tmp_path / "initramfs.cpio.gz")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PERF_SHELL", "PERF_PYTHON", "PERF_BIN",
                        "PERF_UPSTREAM_BIN")}
    env["REALSTACKS_DIR"] = str(rs)
    subprocess.run(["bash", SCRIPT, out, str(tests), KSRC], env=env, check=True,
                   capture_output=True, timeout=300)
    e = cpio_entries(out)
    assert e["realstacks/fp/prog"] == (0o100755, open("/bin/true", "rb").read())
    assert e["realstacks/run.sh"] == (0o100755, b"#!/bin/sh\n")
    assert e["realstacks/input.txt"] == (0o100644, b"data\n")
    # (gen_init_cpio writes a link's target with its NUL)
    assert e["realstacks/link"] == (0o120777, b"fp/prog\0")
    assert e["realstacks/fp"][0] == 0o40755
    names = list(e)
    assert names.index("realstacks") < names.index("realstacks/fp") < \
        names.index("realstacks/fp/prog")
    # A tree without its runner is refused
    (rs / "run.sh").unlink()
    p = subprocess.run(["bash", SCRIPT, out, str(tests), KSRC], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "has no run.sh" in p.stderr, p.stderr
