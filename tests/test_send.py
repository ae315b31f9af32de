"""make send: the sender's identity, versions, range-diffs, recipients and
refusals, on scratch git trees with a stand-in get_maintainer.pl and
sendmail."""
import os
import re
import subprocess
import sys

import pytest

from ci.series import send_prep
from test_apply import ENV, git, kernel_tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEND = os.path.join(ROOT, "ci", "series", "send.sh")
ANN = "Ann Author <ann@kernel.org>"
SAM = "Sam Sender <sam@kernel.org>"
GET_MAINTAINER = """#!/bin/sh
pwd >"$(dirname "$0")/gm.cwd"
echo 'Maint One <maint@kernel.org> (maintainer:UNWIND)'
echo 'Sup Two <sup@kernel.org> (supporter:PERF (EVENTS))'
echo 'Rev Three <rev@kernel.org> (reviewer:UNWIND)'
echo 'Unwind Dev <unwind-dev@example.org> (maintainer:USER SPACE STACK UNWINDING)'
echo 'linux-kernel@vger.kernel.org (open list)'
"""


@pytest.fixture
def env(tmp_path):
    """A scratch world: HOME with its own git config, a series of two
    commits by Ann on a tagged base, stand-ins for get_maintainer.pl and
    sendmail."""
    home = tmp_path / "home"
    home.mkdir()
    gm = tmp_path / "gm.sh"
    gm.write_text(GET_MAINTAINER)
    mailer = tmp_path / "sendmail.sh"
    mailer.write_text(f"#!/bin/sh\ncat >>{tmp_path}/sent.mbox\n")
    mailer.chmod(0o755)
    # No fixes series unless a test lists some (fixes() below).
    fixes_list = tmp_path / "fixes.txt"
    fixes_list.write_text("# none\n")
    e = dict(ENV, HOME=str(home), GIT_CONFIG_NOSYSTEM="1",
             GIT_AUTHOR_NAME="Ann Author", GIT_AUTHOR_EMAIL="ann@kernel.org",
             GET_MAINTAINER=f"sh {gm}", SEND_OUT=str(tmp_path / "send"),
             RESULTS=str(tmp_path / "results"),
             VMTEST_FIXES=str(fixes_list))
    e.pop("GIT_CONFIG_GLOBAL", None)
    t = kernel_tree(tmp_path / "linux")
    git(t, "tag", "base")
    for n in ("a", "b"):
        (t / "kernel" / f"{n}.c").write_text(f"int {n} = 1;\n")
        subprocess.run(["git", "-C", str(t), "commit", "-qam",
                        f"unwind_user: Change {n}\n\nBecause.\n\n"
                        f"Signed-off-by: {ANN}"], env=e, check=True)
    return {"tree": t, "env": e, "tmp": tmp_path, "mailer": mailer,
            "fixes": fixes_list}


def commit(w, msg, name="Ann Author", email="ann@kernel.org", *args):
    e = dict(w["env"], GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email)
    subprocess.run(["git", "-C", str(w["tree"]), "commit", "-qam", msg,
                    *args], env=e, check=True)


def config(w, *kv):
    subprocess.run(["git", "config", "--global", *kv], env=w["env"],
                   check=True)


def identity(w, name="Sam Sender", email="sam@kernel.org"):
    config(w, "user.name", name)
    config(w, "user.email", email)


def send(w, **extra):
    return subprocess.run(["bash", SEND, str(w["tree"]), "base"],
                          env=dict(w["env"], **extra),
                          capture_output=True, text=True)


def out(w, v=1, series="feature"):
    d = w["tmp"] / "send" / f"v{v}" / series
    return {f: (d / f).read_text() for f in sorted(os.listdir(d))}


def patch(files, n):
    return next(t for f, t in files.items() if re.match(rf"v\d+-{n:04d}-", f))


def signoffs(text):
    return re.findall(r"^Signed-off-by: (.*)$", text, re.M)


def untouched(w):
    return (git(w["tree"], "rev-parse", "HEAD"),
            git(w["tree"], "status", "--porcelain"),
            git(w["tree"], "tag", "-l"))


def test_refuses_without_identity(env):
    before = untouched(env)
    r = send(env)
    assert r.returncode == 2
    assert "user.name and user.email is not set" in r.stderr
    assert "git config --global user.name" in r.stderr
    assert "git config --global user.email" in r.stderr
    assert not (env["tmp"] / "send").exists()
    assert untouched(env) == before


def test_refuses_without_email(env):
    config(env, "user.name", "Sam Sender")
    r = send(env)
    assert r.returncode == 2
    assert "git config --global user.email" in r.stderr
    assert "user.name '" not in r.stderr


def test_refuses_a_version_that_is_not_a_number(env):
    identity(env)
    r = send(env, V="two")
    assert r.returncode == 2 and "V=two" in r.stderr


def test_v1_under_the_sender_keeps_the_author(env):
    identity(env)
    before = untouched(env)
    r = send(env)
    assert r.returncode == 0, r.stderr
    files = out(env)
    p1 = patch(files, 1)
    head, _, body = p1.partition("\n\n")
    assert re.search(r"^From: Sam Sender <sam@kernel.org>$", head, re.M)
    assert re.search(r"^Subject: \[PATCH v1 1/2\] unwind_user: Change a$",
                     head, re.M)
    # The author stays the author: an in-body From: line, and the
    # sender's sign-off comes last.
    assert body.startswith(f"From: {ANN}\n")
    assert signoffs(p1) == [ANN, SAM]
    cover = patch(files, 0)
    assert "Subject: [PATCH v1 0/2] unwind_user, perf:" in cover
    assert "*** " not in cover
    assert "Changes in v" not in cover and "Range-diff" not in cover
    assert "normal kernel: not run" in cover
    assert "Differences from upstream Linux" in cover
    assert "base-commit: " + git(env["tree"], "rev-parse", "base").strip() \
        in cover
    assert "feature: v1, no earlier version, no range-diff" in r.stderr
    # Nothing in the tree changed, nothing tagged on a dry run.
    assert untouched(env) == before
    log = files["send-email.log"]
    assert log.count("Dry-OK") == 3
    assert not (env["tmp"] / "sent.mbox").exists()


def test_recipients(env):
    identity(env)
    r = send(env, TO="distro@lists.example.net, extra@kernel.org",
             CC="cc@kernel.org")
    assert r.returncode == 0, r.stderr
    assert (env["tmp"] / "gm.cwd").read_text().strip() == str(env["tree"])
    p1 = patch(out(env), 1)
    head = p1.partition("\n\n")[0].replace("\n    ", " ")
    to = re.search(r"^To: (.*)$", head, re.M).group(1)
    cc = re.search(r"^Cc: (.*)$", head, re.M).group(1)
    assert to == ("Maint One <maint@kernel.org>, Sup Two <sup@kernel.org>, "
                  "extra@kernel.org")
    assert cc == ("Rev Three <rev@kernel.org>, linux-kernel@vger.kernel.org,"
                  f" {ANN}, cc@kernel.org")
    # Reserved domains receive no mail: left out, and named.
    assert "example" not in to + cc
    rec = out(env)["recipients.txt"]
    assert "Unwind Dev <unwind-dev@example.org>" in rec
    assert "distro@lists.example.net" in rec


def test_sender_signs_last_once(env):
    t = env["tree"]
    # Sam already signed last: no second sign-off.
    msg = f"unwind_user: Change c\n\nSigned-off-by: {ANN}\nSigned-off-by: {SAM}"
    (t / "kernel" / "a.c").write_text("int a = 3;\n")
    commit(env, msg, "Sam Sender", "sam@kernel.org")
    # Sam signed, then Rev: Sam signs again, last.
    msg = (f"unwind_user: Change d\n\nSigned-off-by: {SAM}\n"
           "Signed-off-by: Rev Three <rev@kernel.org>")
    (t / "kernel" / "b.c").write_text("int b = 3;\n")
    commit(env, msg)
    identity(env)
    assert send(env).returncode == 0
    files = out(env)
    assert signoffs(patch(files, 3)) == [ANN, SAM]
    assert signoffs(patch(files, 4)) == [SAM, "Rev Three <rev@kernel.org>",
                                         SAM]
    # The sender wrote it: no in-body From: line; Ann wrote the next.
    assert "\n\nFrom: " not in patch(files, 3).partition("Subject:")[2]
    assert f"\n\nFrom: {ANN}\n" in patch(files, 4)


def test_send_tags_and_next_version_has_a_range_diff(env):
    identity(env)
    config(env, "sendemail.smtpServer", str(env["mailer"]))
    r = send(env, SEND="1")
    assert r.returncode == 0, r.stderr
    assert (env["tmp"] / "sent.mbox").read_text().count("\nSubject: ") == 3
    assert git(env["tree"], "tag", "-l").split() == ["base", "series-v1"]
    msg = git(env["tree"], "tag", "-l", "--format=%(contents)", "series-v1")
    assert "base-commit: " + git(env["tree"], "rev-parse", "base").strip() \
        in msg
    # The tag holds what was sent: the sender's sign-off included.
    assert signoffs(git(env["tree"], "log", "-1", "--format=%B",
                        "series-v1")) == [ANN, SAM]

    # v1 again is refused; the work goes on, and the next run is v2.
    r = send(env, SEND="1", V="1")
    assert r.returncode == 2 and "v1 was sent already" in r.stderr
    t = env["tree"]
    commit(env, f"unwind_user: Change b\n\nBecause, and more.\n\n"
           f"Signed-off-by: {ANN}", "Ann Author", "ann@kernel.org", "--amend")
    (t / "kernel" / "c.c").write_text("int c;\n")
    git(t, "add", "kernel/c.c")
    commit(env, f"unwind_user: Add c\n\nSigned-off-by: {ANN}")
    r = send(env)
    assert r.returncode == 0, r.stderr
    files = out(env, 2)
    cover = patch(files, 0)
    assert "Subject: [PATCH v2 0/3]" in cover
    assert "Changes in v2:\n - changed: unwind_user: Change b\n" \
        " - new: unwind_user: Add c\n" in cover
    assert "Range-diff against v1:" in cover
    assert "+    Because, and more." in cover.split("Range-diff against v1:")[1]
    assert re.search(r"^Message-Id: <cover\.\d+\.git\.sam@kernel\.org>$",
                     cover, re.M)
    assert "feature: range-diff against series-v1" in r.stderr
    # A dry run tags nothing.
    assert "series-v2" not in git(t, "tag", "-l")


def test_version_without_the_previous_tag(env):
    identity(env)
    r = send(env, V="3")
    assert r.returncode == 0, r.stderr
    cover = patch(out(env, 3), 0)
    assert "Subject: [PATCH v3 0/2]" in cover
    assert "no tag series-v2 in the tree, so no range-diff" in cover
    assert "Range-diff" not in cover
    assert "feature: no tag series-v2: its v3 has no range-diff" in r.stderr


def test_send_needs_an_smtp_server(env):
    identity(env)
    r = send(env, SEND="1")
    assert r.returncode == 2
    assert "git config --global sendemail.smtpServer" in r.stderr
    assert "series-v1" not in git(env["tree"], "tag", "-l")


def test_send_refuses_a_reserved_sender_address(env):
    identity(env, email="me@example.org")
    config(env, "sendemail.smtpServer", str(env["mailer"]))
    assert send(env).returncode == 0
    r = send(env, SEND="1")
    assert r.returncode == 2 and "reserved domain" in r.stderr
    assert not (env["tmp"] / "sent.mbox").exists()


def test_tested_section_counts_the_latest_runs(env, tmp_path):
    d = tmp_path / "results" / "vmtest-normal"
    d.mkdir(parents=True)
    cases = (["kunit/unwind_user_fp/a", "kunit/unwind_deferred/b",
              "selftests/callchain_test/X.Y", "run/guest_finished"],
             ["selftests/deferred_test/Z"], ["selftests/cookie_test/W"])
    xml = ['<testsuites><testsuite name="vmtest">']
    xml += [f'<testcase name="test_guest[{c}]"/>' for c in cases[0]]
    xml += [f'<testcase name="test_guest[{c}]"><failure/></testcase>'
            for c in cases[1]]
    xml += [f'<testcase name="test_guest[{c}]"><skipped/></testcase>'
            for c in cases[2]]
    (d / "junit.xml").write_text("".join(xml) + "</testsuite></testsuites>")
    (d / "run.json").write_text('{"accel": "kvm", "smp": 4, '
                                '"total_seconds": 37.2}')
    identity(env)
    assert send(env).returncode == 0
    cover = patch(out(env), 0)
    assert (" - normal kernel: 2 KUnit cases passed, 1 selftest cases "
            "passed (1 failed, 1 skipped), 1 run checks passed; "
            "QEMU kvm, 4 CPUs, 37 s, ") in cover
    assert " - debug kernel (KASAN, lockdep, atomic sleep checks): not run" \
        in cover


def test_a_patch_rewritten_beyond_recognition(env):
    identity(env)
    config(env, "sendemail.smtpServer", str(env["mailer"]))
    assert send(env, SEND="1").returncode == 0
    (env["tree"] / "kernel" / "b.c").write_text("long b = 2;\n")
    commit(env, f"unwind_user: Change b\n\nSigned-off-by: {ANN}",
           "Ann Author", "ann@kernel.org", "--amend")
    r = send(env)
    assert r.returncode == 0, r.stderr
    cover = patch(out(env, 2), 0)
    assert "Changes in v2:\n - rewritten: unwind_user: Change b\n (" in cover


# ci/series/send_prep.py, the text work of send.sh, on its own.
RANGE_DIFF = """\
1:  56435cf = 1:  4315605 unwind_user: Same
2:  3744e6e ! 2:  4ca4848 unwind_user: Changed
3:  1111111 < -:  ------- unwind_user: Rewritten
4:  2222222 < -:  ------- perf: Dropped
-:  ------- > 3:  0a31c2e unwind_user: Rewritten
-:  ------- > 4:  0b31c2e perf: New   with  spaces
"""


@pytest.mark.parametrize("addr,is_reserved", [
    ("<me@example.org>", True), ("dev@lists.example.net", True),
    ("a@b.EXAMPLE", True), ("x@host.invalid", True), ("x@foo.test", True),
    ("root@localhost", True), ("me@kernel.org", False),
    ("me@example.org.uk", False), ("me@notexample.com", False)])
def test_reserved_domains(addr, is_reserved):
    assert send_prep.reserved(addr) == is_reserved


def test_recipients_by_role_once_each():
    gm = re.findall(r"^echo '(.*)'$", GET_MAINTAINER, re.M) + [
        "", "Maint One <MAINT@kernel.org> (reviewer:OTHER (X) (Y))"]
    people = [ANN, "", "  " + SAM, "Sam Sender <SAM@kernel.org>", ANN]
    to, cc, skipped = send_prep.recipients(
        gm, people, "sam@kernel.org", ["extra@kernel.org"],
        ["Rev Three <rev@kernel.org>", "cc@kernel.org"])
    assert to == ["Maint One <maint@kernel.org>", "Sup Two <sup@kernel.org>",
                  "extra@kernel.org"]
    assert cc == ["Rev Three <rev@kernel.org>", "linux-kernel@vger.kernel.org",
                  ANN, "cc@kernel.org"]
    assert skipped == ["Unwind Dev <unwind-dev@example.org>"]


def test_recipients_without_a_maintainer():
    assert send_prep.recipients([], [ANN, "Rev <rev@kernel.org>"],
                                "sam@kernel.org") == \
        ([ANN], ["Rev <rev@kernel.org>"], [])
    with pytest.raises(send_prep.Refusal, match="found nobody"):
        send_prep.recipients([], [SAM], "sam@kernel.org")
    assert send_prep.recipients_text([ANN], [], ["x@a.test"]) == (
        f"To:\n  {ANN}\nCc:\nLeft out (reserved domain, no mail is "
        "delivered there):\n  x@a.test\n")


def test_to_and_cc_lists():
    assert send_prep.extra("TO", ' a@kernel.org ,, "Q  Name" <q@k.org>,'
                           '  Two   Words <t@k.org> ') == \
        ["a@kernel.org", "Q  Name <q@k.org>", "Two Words <t@k.org>"]
    assert send_prep.extra("CC", "") == []
    with pytest.raises(send_prep.Refusal, match="CC=O'Brien"):
        send_prep.extra("CC", "O'Brien <ob@kernel.org>")


def test_range_diff_summary():
    assert send_prep.range_diff_summary(RANGE_DIFF) == [
        " - changed: unwind_user: Changed",
        " - rewritten: unwind_user: Rewritten",
        " - dropped: perf: Dropped",
        " - new: perf: New   with  spaces"]
    assert send_prep.range_diff_summary(RANGE_DIFF.splitlines()[0]) == \
        [" - no change in the patches"]


def test_changes_section():
    assert send_prep.changes(1, RANGE_DIFF, "notes\n") == ""
    assert send_prep.changes(3) == (
        "Changes in v3:\n - no tag series-v2 in the tree, so no range-diff "
        "against\n   v2 (tag what was sent as v2 to get one).\n\n")
    # Notes first, each line indented, a last line without a newline too.
    assert send_prep.changes(2, RANGE_DIFF.splitlines()[1], "- a\n\n- b") \
        == ("Changes in v2:\n - a\n \n - b\n - changed: unwind_user: "
            "Changed\n (range-diff against v1 at the end of this letter)\n\n")


def test_fill_cover(tmp_path):
    cover = tmp_path / "cover"
    cover.write_text("Subject: [PATCH 0/2] *** SUBJECT HERE ***\n\n"
                     "*** BLURB HERE ***\n\nshortlog\n")
    blurb = tmp_path / "blurb"
    blurb.write_text("Why $1 and \\1 stay.\n")
    assert send_prep.main(["fill-cover", "--", str(cover), "-s: $x",
                           str(blurb)]) == 0
    assert cover.read_text() == ("Subject: [PATCH 0/2] -s: $x\n\n"
                                 "Why $1 and \\1 stay.\n\nshortlog\n")
    cover.write_text("*** BLURB HERE ***")  # no newline: not filled
    r = subprocess.run([sys.executable, "-m", "ci.series.send_prep", "fill-cover", str(cover), "s",
                        str(blurb)], capture_output=True, text=True)
    assert r.returncode == 2
    assert f"could not fill in the cover letter {cover}" in r.stderr


def test_changes_notes_in_the_cover_letter(env, tmp_path):
    identity(env)
    config(env, "sendemail.smtpServer", str(env["mailer"]))
    assert send(env, SEND="1").returncode == 0
    notes = tmp_path / "notes"
    notes.write_text("- Answered the review of v1.\n  (details)\n")
    r = send(env, CHANGES=str(notes))
    assert r.returncode == 0, r.stderr
    assert "Changes in v2:\n - Answered the review of v1.\n   (details)\n" \
        " - no change in the patches\n (range-diff against v1" \
        in patch(out(env, 2), 0)
    r = send(env, CHANGES=str(tmp_path / "none"))
    assert r.returncode == 2 and "none: no such file" in r.stderr


# Two series: the fixes first, each a thread of its own.
def with_a_fix(w):
    """The env's tree rebuilt as: base, "perf: Fix x" (a fix, listed in
    the fixes list), then the two feature commits."""
    t = w["tree"]
    a = git(t, "rev-parse", "HEAD~1").strip()
    b = git(t, "rev-parse", "HEAD").strip()
    git(t, "reset", "-q", "--hard", "base")
    (t / "kernel" / "x.c").write_text("int x;\n")
    git(t, "add", "kernel/x.c")
    commit(w, f"perf: Fix x\n\nIt was broken.\n\nSigned-off-by: {ANN}")
    git(t, "cherry-pick", a, b)
    w["fixes"].write_text("# the fixes\nperf: Fix x\n")


def test_the_fixes_go_as_their_own_series(env):
    with_a_fix(env)
    identity(env)
    r = send(env)
    assert r.returncode == 0, r.stderr
    fixes, feature = out(env, series="fixes"), out(env)
    fcover, cover = patch(fixes, 0), patch(feature, 0)
    subject = open(os.path.join(ROOT, "ci", "series", "fixes-cover-letter.txt")) \
        .readline().strip()
    assert f"Subject: [PATCH v1 0/1] {subject}" in fcover
    assert re.search(r"^Subject: \[PATCH v1 1/1\] perf: Fix x$",
                     patch(fixes, 1), re.M)
    # The fixes' letter: its own text, no "Tested" of the feature runs.
    assert "6.12" in fcover and "7.2" in fcover
    assert "normal kernel: not run" not in fcover
    # The feature: numbered on its own, based on the fixes, and says so.
    assert "Subject: [PATCH v1 0/2] unwind_user, perf:" in cover
    assert re.search(r"^Subject: \[PATCH v1 1/2\] unwind_user: Change a$",
                     patch(feature, 1), re.M)
    assert ("This series is based on the fixes series\n"
            f"\"[PATCH v1 0/1] {subject}\"\n") in cover
    assert "\n  perf: Fix x\n" in cover
    base = git(env["tree"], "rev-parse", "base").strip()
    assert f"base-commit: {base}\nprerequisite-patch-id: " in cover
    assert f"base-commit: {base}\n" in fcover
    assert "prerequisite-patch-id" not in fcover
    # Each thread under its own cover letter; 2 + 3 mails.
    assert fixes["send-email.log"].count("Dry-OK") == 2
    assert feature["send-email.log"].count("Dry-OK") == 3
    assert "1 fixes + cover letter; 2 feature + cover letter" in r.stderr
    assert "dry run: 5 mails checked" in r.stderr


def test_both_series_are_tagged_and_range_diffed(env):
    with_a_fix(env)
    identity(env)
    config(env, "sendemail.smtpServer", str(env["mailer"]))
    r = send(env, SEND="1")
    assert r.returncode == 0, r.stderr
    t = env["tree"]
    assert git(t, "tag", "-l").split() == ["base", "fixes-v1", "series-v1"]
    assert git(t, "log", "-1", "--format=%s", "fixes-v1").strip() == \
        "perf: Fix x"
    # The feature as sent sits on the fixes as sent.
    assert git(t, "rev-parse", "series-v1~2").strip() == \
        git(t, "rev-parse", "fixes-v1^{commit}").strip()
    assert (env["tmp"] / "sent.mbox").read_text().count("\nSubject: ") == 5
    # v1 is refused again, whichever of its tags is there.
    r = send(env, SEND="1", V="1")
    assert r.returncode == 2 and "tag fixes-v1" in r.stderr
    # Reword the fix only: the fixes' v2 says so, the feature's does not.
    git(t, "checkout", "-q", "HEAD~2")
    commit(env, f"perf: Fix x\n\nIt was broken, and more.\n\n"
           f"Signed-off-by: {ANN}", "Ann Author", "ann@kernel.org", "--amend")
    fixed = git(t, "rev-parse", "HEAD").strip()
    git(t, "checkout", "-q", "-")
    git(t, "rebase", "-q", "--onto", fixed, "HEAD~2")
    r = send(env)
    assert r.returncode == 0, r.stderr
    assert "fixes: range-diff against fixes-v1" in r.stderr
    assert "feature: range-diff against series-v1" in r.stderr
    fcover = patch(out(env, 2, "fixes"), 0)
    assert "Changes in v2:\n - changed: perf: Fix x\n" in fcover
    assert "+    It was broken, and more." in fcover
    cover = patch(out(env, 2), 0)
    assert "Changes in v2:\n - no change in the patches\n" in cover
    assert "\"[PATCH v2 0/1] " in cover


def test_a_fix_after_the_feature_is_refused(env):
    env["fixes"].write_text("unwind_user: Change a\n")
    (env["tree"] / "kernel" / "c.c").write_text("int c;\n")
    git(env["tree"], "add", "kernel/c.c")
    identity(env)
    before = untouched(env)
    env["fixes"].write_text("unwind_user: Change b\n")
    r = send(env)
    assert r.returncode == 2
    assert "'unwind_user: Change b'" in r.stderr
    assert "comes after the feature's 'unwind_user: Change a'" in r.stderr
    env["fixes"].write_text("perf: Gone\n")
    r = send(env)
    assert r.returncode == 2
    assert "no commit 'perf: Gone'" in r.stderr
    assert untouched(env) == before
    assert not (env["tmp"] / "send").exists()
