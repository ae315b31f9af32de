"""make kernel-doc: a new file must be clean, a changed one may keep the
warnings of the base but not add any. scripts/kernel-doc is a stand-in
that warns about every line holding BAD."""
import os
import subprocess

from test_apply import git, kernel_tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "ci", "checks", "kernel-doc.sh")
KDOC = r"""#!/usr/bin/perl
my $f = $ARGV[-1]; open(my $h, '<', $f) or die; my $n = 0;
while (<$h>) { $n++; print STDERR "$f:$n: warning: $1\n" if /BAD (\w+)/; }
"""


def tree(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    os.makedirs(t / "scripts")
    (t / "scripts" / "kernel-doc").write_text(KDOC)
    (t / "kernel" / "a.c").write_text("int a; /* BAD old */\n")
    git(t, "add", "-A")
    git(t, "commit", "-qm", "base with a kernel-doc warning")
    git(t, "tag", "vmtest-base")
    return t


def run(t):
    return subprocess.run(["bash", SCRIPT, str(t)], capture_output=True,
                          text=True)


def test_old_warnings_of_a_changed_file_pass(tmp_path):
    t = tree(tmp_path)
    (t / "kernel" / "a.c").write_text("int b;\nint a; /* BAD old */\n")
    (t / "kernel" / "new.h").write_text("/* clean */\n")
    git(t, "add", "-A")
    git(t, "commit", "-qm", "series")
    r = run(t)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 files, no new warnings (1 in the base)" in r.stderr


def test_new_warnings_fail(tmp_path):
    t = tree(tmp_path)
    (t / "kernel" / "a.c").write_text("int a; /* BAD old */\n/* BAD two */\n")
    (t / "kernel" / "new.h").write_text("/* BAD three */\n")
    (t / "tools").mkdir()
    (t / "tools" / "x.c").write_text("/* BAD tools */\n")
    git(t, "add", "-A")
    git(t, "commit", "-qm", "series")
    r = run(t)
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["kernel/a.c: warning: two",
                                     "kernel/new.h: warning: three"]
    assert "2 files, 2 new warnings" in r.stderr
