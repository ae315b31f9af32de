"""make export: patches/ regenerated from the work tree, without churn."""
import os
import subprocess

from test_apply import ENV, git, kernel_tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPORT = os.path.join(ROOT, "ci", "export.sh")


def export(tree, patches):
    return subprocess.run(["bash", EXPORT, str(tree), "base"],
                          env=dict(ENV, VMTEST_PATCHES=str(patches)),
                          capture_output=True, text=True)


def snapshot(d):
    return {f: open(os.path.join(d, f)).read() for f in sorted(os.listdir(d))}


def test_export_is_stable_and_writes_a_cover_letter(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    git(t, "tag", "base")
    (t / "kernel" / "a.c").write_text("int a = 1;\n")
    git(t, "commit", "-qam", "unwind_user: Change a")
    out = tmp_path / "patches"
    r = export(t, out)
    assert r.returncode == 0, r.stderr
    first = snapshot(out)
    assert list(first) == ["0000-cover-letter.patch",
                           "0001-unwind_user-Change-a.patch"]
    assert "Subject: [PATCH 0/1] unwind_user, perf:" in \
        first["0000-cover-letter.patch"]
    assert first["0001-unwind_user-Change-a.patch"].startswith(
        "From 0000000000000000000000000000000000000000 ")
    assert export(t, out).returncode == 0
    assert snapshot(out) == first


def test_export_drops_patches_that_left_the_series(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    git(t, "tag", "base")
    for n in ("a", "b"):
        (t / "kernel" / f"{n}.c").write_text(f"int {n} = 1;\n")
        git(t, "commit", "-qam", f"unwind_user: Change {n}")
    out = tmp_path / "patches"
    export(t, out)
    assert len(os.listdir(out)) == 3
    git(t, "reset", "-q", "--hard", "HEAD~1")
    export(t, out)
    assert sorted(os.listdir(out)) == ["0000-cover-letter.patch",
                                       "0001-unwind_user-Change-a.patch"]


def test_export_without_base_says_what_to_do(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    r = export(t, tmp_path / "patches")
    assert r.returncode == 2 and "BASE=" in r.stderr
