"""make checkpatch (ci/checks/checkpatch.sh) over both series, with a stand-in
scripts/checkpatch.pl: each patch judged once, named by its series."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Warns about a patch that says BAD, like checkpatch's --terse lines.
CHECKPATCH = r"""#!/usr/bin/perl
my $f = $ARGV[-1];
open(my $h, '<', $f) or die;
while (<$h>) {
	if (/BAD/) { print "$f:1: WARNING:TEST: bad\n"; exit 1; }
}
exit 0;
"""


def patch(d, name, body):
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(f"Subject: [PATCH] {name}\n\n{body}\n")


def run(tmp_path, fixes_body, feature_body):
    tree = tmp_path / "linux"
    (tree / "scripts").mkdir(parents=True)
    (tree / "scripts" / "checkpatch.pl").write_text(CHECKPATCH)
    (tree / "scripts" / "checkpatch.pl").chmod(0o755)
    p = tmp_path / "patches"
    patch(p / "fixes", "0001-a.patch", fixes_body)
    patch(p / "feature", "0001-a.patch", feature_body)
    patch(p / "feature", "0002-b.patch", "fine")
    return subprocess.run(["bash", os.path.join(ROOT, "ci", "checks", "checkpatch.sh"),
                           str(tree)], capture_output=True, text=True,
                          env=dict(os.environ, VMTEST_PATCHES=str(p)))


def test_both_series_each_patch_once(tmp_path):
    # The two series' 0001 have the same name: each keeps its own report.
    r = run(tmp_path, "BAD", "fine")
    assert r.returncode == 1
    assert "fixes/0001-a.patch: " in r.stdout
    assert "feature/0001-a.patch" not in r.stdout
    assert "3 patches (1 fixes, 2 feature), 1 with findings" in r.stderr
    r = run(tmp_path / "2", "fine", "BAD")
    assert r.returncode == 1
    assert "feature/0001-a.patch: " in r.stdout
    assert "fixes/0001-a.patch" not in r.stdout
    r = run(tmp_path / "3", "fine", "fine")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 patches (1 fixes, 2 feature), 0 with findings" in r.stderr
