"""make export: patches/ regenerated from the work tree, without churn."""
import os
import re
import subprocess

from test_apply import ENV, git, kernel_tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPORT = os.path.join(ROOT, "ci", "series", "export.sh")


def export(tree, patches, fixes="# none\n"):
    """ci/series/export.sh with FIXES (the text of a fixes list) as the list."""
    lst = os.path.join(os.path.dirname(str(patches)), "fixes.txt")
    with open(lst, "w") as f:
        f.write(fixes)
    return subprocess.run(["bash", EXPORT, str(tree), "base"],
                          env=dict(ENV, VMTEST_PATCHES=str(patches),
                                   VMTEST_FIXES=lst),
                          capture_output=True, text=True)


def snapshot(d):
    """{path under d: text} of every file under d."""
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, d)] = open(p).read()
    return dict(sorted(out.items()))


def test_export_is_stable_and_writes_a_cover_letter(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    git(t, "tag", "base")
    (t / "kernel" / "a.c").write_text("int a = 1;\n")
    git(t, "commit", "-qam", "unwind_user: Change a")
    out = tmp_path / "patches"
    r = export(t, out)
    assert r.returncode == 0, r.stderr
    first = snapshot(out)
    assert list(first) == ["feature/0000-cover-letter.patch",
                           "feature/0001-unwind_user-Change-a.patch"]
    assert "Subject: [PATCH 0/1] unwind_user, perf:" in \
        first["feature/0000-cover-letter.patch"]
    assert first["feature/0001-unwind_user-Change-a.patch"].startswith(
        "From 0000000000000000000000000000000000000000 ")
    # Twelve-digit blob names, as the kernel's git setup writes them, not
    # git's default that grows with the repository.
    assert re.search(r"^index [0-9a-f]{12}\.\.[0-9a-f]{12} 100644$",
                     first["feature/0001-unwind_user-Change-a.patch"], re.M)
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
    assert len(snapshot(out)) == 3
    git(t, "reset", "-q", "--hard", "HEAD~1")
    export(t, out)
    assert list(snapshot(out)) == ["feature/0000-cover-letter.patch",
                                   "feature/0001-unwind_user-Change-a.patch"]


def test_export_without_base_says_what_to_do(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    r = export(t, tmp_path / "patches")
    assert r.returncode == 2 and "BASE=" in r.stderr


def tree_with_a_fix(tmp_path):
    """base, "perf: Fix x", then two feature commits."""
    t = kernel_tree(tmp_path / "linux")
    git(t, "tag", "base")
    (t / "kernel" / "x.c").write_text("int x;\n")
    git(t, "add", "kernel/x.c")
    git(t, "commit", "-qm", "perf: Fix x")
    for n in ("a", "b"):
        (t / "kernel" / f"{n}.c").write_text(f"int {n} = 1;\n")
        git(t, "commit", "-qam", f"unwind_user: Change {n}")
    return t


def test_export_writes_the_fixes_and_the_feature(tmp_path):
    t = tree_with_a_fix(tmp_path)
    out = tmp_path / "patches"
    # The layout of before (one series at the top) is replaced.
    out.mkdir()
    (out / "0001-old.patch").write_text("old\n")
    r = export(t, out, "# fixes\nperf: Fix x\n")
    assert r.returncode == 0, r.stderr
    files = snapshot(out)
    assert list(files) == [
        "feature/0000-cover-letter.patch",
        "feature/0001-unwind_user-Change-a.patch",
        "feature/0002-unwind_user-Change-b.patch",
        "fixes/0000-cover-letter.patch",
        "fixes/0001-perf-Fix-x.patch"]
    assert "1 fixes, 2 feature" in r.stderr
    fcover = files["fixes/0000-cover-letter.patch"]
    cover = files["feature/0000-cover-letter.patch"]
    subject = open(os.path.join(ROOT, "ci", "series", "fixes-cover-letter.txt")) \
        .readline().strip()
    assert f"Subject: [PATCH 0/1] {subject}\n" in fcover
    assert "Subject: [PATCH 0/2] unwind_user, perf:" in cover
    assert "Subject: [PATCH 1/2] unwind_user: Change a" in \
        files["feature/0001-unwind_user-Change-a.patch"]
    # The feature names the fixes it is based on, by subject and patch-id.
    assert f"This series is based on the fixes series\n\"[PATCH 0/1] " \
        f"{subject}\"\n" in cover
    assert "\n  perf: Fix x\n" in cover
    base = git(t, "rev-parse", "base").strip()
    pid = subprocess.run(
        f"git -C {t} show HEAD~2 | git patch-id --stable", shell=True,
        capture_output=True, text=True).stdout.split()[0]
    first = files["feature/0001-unwind_user-Change-a.patch"]
    assert first.endswith(f"base-commit: {base}\n"
                          f"prerequisite-patch-id: {pid}\n")
    assert cover.endswith(f"base-commit: {base}\n"
                          f"prerequisite-patch-id: {pid}\n")
    assert fcover.endswith(f"base-commit: {base}\n")
    assert " kernel/x.c | 1 +" in fcover and "kernel/x.c" not in cover
    # Stable: a second export changes nothing.
    assert export(t, out, "perf: Fix x\n").returncode == 0
    assert snapshot(out) == files
    # Without fixes, no fixes directory.
    assert export(t, out, "").returncode == 0
    assert not (out / "fixes").exists()
    assert len(snapshot(out)) == 4


def test_export_refuses_a_fix_out_of_place(tmp_path):
    t = tree_with_a_fix(tmp_path)
    out = tmp_path / "patches"
    assert export(t, out, "perf: Fix x\n").returncode == 0
    before = snapshot(out)
    r = export(t, out, "perf: Fix x\nunwind_user: Change b\n")
    assert r.returncode == 2
    assert "'unwind_user: Change b'" in r.stderr
    assert "comes after the feature's 'unwind_user: Change a'" in r.stderr
    r = export(t, out, "perf: Fix x, reworded\n")
    assert r.returncode == 2
    assert "no commit 'perf: Fix x, reworded'" in r.stderr
    assert snapshot(out) == before


def test_the_fixes_list_and_cover_letter_match_patches_fixes():
    """ci/series/fixes.txt names exactly the patches of patches/fixes/, in order,
    and the fixes' cover letter has one numbered paragraph per fix: a
    fix added to the tree and the list must be described there too."""
    r = subprocess.run(
        ["bash", "-c", '. ci/series/lib.sh && for p in $(series_files fixes); do '
         'patch_subject "$p"; done && sed -e "/^#/d" -e "/^[[:space:]]*$/d" '
         '"$FIXES_LIST"'], cwd=ROOT, capture_output=True, text=True,
        check=True, env={k: v for k, v in os.environ.items()
                         if k not in ("VMTEST_PATCHES", "VMTEST_FIXES")})
    lines = r.stdout.splitlines()
    patches, listed = lines[:len(lines) // 2], lines[len(lines) // 2:]
    assert patches and patches == listed
    with open(os.path.join(ROOT, "ci", "series", "fixes-cover-letter.txt")) as f:
        letter = f.read()
    items = [int(n) for n in re.findall(r"^ (\d+)\. ", letter, re.M)]
    assert items == list(range(1, len(listed) + 1)), \
        "ci/series/fixes-cover-letter.txt: one ' N. ' paragraph per fix"


def test_export_check_fails_on_patches_the_export_would_change(tmp_path):
    """make check's export-current step: patches/ as make export writes
    it passes; a hand-edited patch, or a cover letter not re-exported
    after its text changed, fails and is named."""
    check = os.path.join(ROOT, "ci", "series", "export-check.sh")
    t = kernel_tree(tmp_path / "linux")
    git(t, "tag", "base")
    (t / "kernel" / "a.c").write_text("int a = 1;\n")
    git(t, "commit", "-qam", "unwind_user: Change a")
    out = tmp_path / "patches"
    assert export(t, out).returncode == 0
    env = dict(ENV, VMTEST_PATCHES=str(out),
               VMTEST_FIXES=str(tmp_path / "fixes.txt"))
    r = subprocess.run(["bash", check, str(t), "base"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cover = out / "feature" / "0000-cover-letter.patch"
    cover.write_text(cover.read_text().replace("Subject:", "Subject: old"))
    r = subprocess.run(["bash", check, str(t), "base"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "feature/0000-cover-letter.patch" in r.stderr and \
        "run 'make export'" in r.stderr, r.stderr


def test_export_check_accepts_the_same_series_on_a_newer_base(tmp_path):
    """Debian's 6.12 moves (6.12.117, then .118): make check rebuilds the
    tree from patches/ on whatever base is installed, and the export of
    that tree differs from patches/ only in what the base decides (index
    lines, hunk line numbers, base-commit). That is the same series: the
    check passes and says to re-export; a hand edit on the moved base
    still fails."""
    check = os.path.join(ROOT, "ci", "series", "export-check.sh")
    t = kernel_tree(tmp_path / "linux")
    (t / "kernel" / "a.c").write_text("".join(f"int a{i};\n" for i in range(20)))
    git(t, "commit", "-qam", "Linux 6.12.117")
    git(t, "tag", "old")
    a = t / "kernel" / "a.c"
    a.write_text(a.read_text().replace("int a15;", "int a15 = 15;"))
    git(t, "commit", "-qam", "unwind_user: Change a")
    out = tmp_path / "patches"
    fixes = tmp_path / "fixes.txt"
    git(t, "tag", "base", "old")
    assert export(t, out).returncode == 0
    # The stable update: a line added above the hunk, another file changed.
    git(t, "checkout", "-q", "old")
    a.write_text("/* 6.12.118 */\n" + a.read_text())
    (t / "kernel" / "b.c").write_text("int b = 118;\n")
    git(t, "commit", "-qam", "Linux 6.12.118")
    git(t, "tag", "-f", "base")
    git(t, "am", "-q", str(out / "feature" / "0001-unwind_user-Change-a.patch"))
    env = dict(ENV, VMTEST_PATCHES=str(out), VMTEST_FIXES=str(fixes))
    r = subprocess.run(["bash", check, str(t), "base"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Linux 6.12.118" in r.stderr and "make export" in r.stderr, r.stderr
    p = out / "feature" / "0001-unwind_user-Change-a.patch"
    p.write_text(p.read_text().replace("Change a", "Change a!"))
    r = subprocess.run(["bash", check, str(t), "base"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "0001-unwind_user-Change-a.patch" in r.stderr, r.stderr
