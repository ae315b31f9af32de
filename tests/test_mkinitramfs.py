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
