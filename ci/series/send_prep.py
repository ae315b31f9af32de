#!/usr/bin/env python3
"""The parts of make send (ci/series/send.sh) that are text processing.

usage: python3 -m ci.series.send_prep reserved ADDRESS
       send_prep.py recipients --gm FILE --people FILE --sender EMAIL
                               [--to LIST] [--cc LIST] --out FILE
       send_prep.py changes V [--tag NAME] [--range-diff FILE] [--notes FILE]
       send_prep.py based-on --subjects FILE FIXES_SUBJECT
       send_prep.py fill-cover COVER SUBJECT BLURB_FILE

reserved: exit 0 when ADDRESS is in a domain that receives no mail.
recipients: To: and Cc: from get_maintainer.pl's output (--gm) and the
series' authors and signers (--people), one "to<TAB>who" or "cc<TAB>who"
line each on stdout; --out gets the list for people to read.
changes: the cover letter's "Changes in vN" section; --range-diff (git
range-diff -s against v(N-1)) is given when NAME-v(N-1) exists (NAME:
series, the feature's tags, or fixes).
based-on: the feature's paragraph saying it is based on the fixes series
(its cover letter's subject line, the fixes' subjects one a line in FILE).
fill-cover: format-patch's cover letter with its subject and blurb.
A usage or setup error exits 2 with "error: ..." (ci/lib.sh's die).
"""
import argparse
import re
import shlex
import sys

# Reserved names (RFC 2606, RFC 6761): no mail is delivered there.
RESERVED = re.compile(r"@([^@>]*\.)?(example\.(com|net|org)|example|invalid"
                      r"|test|localhost)>?$", re.I)
# get_maintainer.pl's " (role:SUBSYSTEM (MORE))" after a name.
ROLE = re.compile(r" \([^()]*(\([^()]*\)[^()]*)*\)$")


class Refusal(Exception):
    """A usage or setup error: exit 2 with this message."""


def reserved(addr):
    return bool(RESERVED.search(addr))


def addr_of(who):
    """The address in "Name <addr>" (or who itself), lower case."""
    return re.sub(r".*<([^>]*)>.*", r"\1", who).lower()


def extra(var, value):
    """TO= or CC=: comma separated, each trimmed and unquoted as a shell
    would (what xargs did here before)."""
    out = []
    for a in value.split(","):
        try:
            a = " ".join(shlex.split(a))
        except ValueError as e:
            raise Refusal(f"{var}={value}: {e} in '{a}'") from None
        if a:
            out.append(a)
    return out


def recipients(gm, people, sender, to_extra=(), cc_extra=()):
    """(to, cc, skipped): maintainers and supporters to To:, reviewers,
    lists and the series' people to Cc:, then TO= and CC=; each address
    once, never the sender's; reserved domains skipped."""
    to, cc, skipped = [], [], []
    seen = {addr_of(sender)}

    def add(lst, who):
        a = addr_of(who)
        if a in seen:
            return
        seen.add(a)
        if reserved(a):
            skipped.append(who)
        else:
            lst.append(who)

    for line in gm:
        if line:
            who = ROLE.sub("", line, count=1)
            is_to = "(maintainer:" in line or "(supporter:" in line
            add(to if is_to else cc, who)
    for who in people:
        who = who.lstrip(" ")
        if who:
            add(cc, who)
    for who in to_extra:
        add(to, who)
    for who in cc_extra:
        add(cc, who)
    if not to and not cc:
        raise Refusal("get_maintainer.pl found nobody to send to: "
                      "give TO=list@vger.kernel.org")
    if not to:
        to, cc = cc[:1], cc[1:]
    return to, cc, skipped


def recipients_text(to, cc, skipped):
    text = "To:\n" + "".join(f"  {a}\n" for a in to)
    text += "Cc:\n" + "".join(f"  {a}\n" for a in cc)
    if skipped:
        text += ("Left out (reserved domain, no mail is delivered there):\n"
                 + "".join(f"  {a}\n" for a in skipped))
    return text


def range_diff_summary(text):
    """Per patch of `git range-diff -s`: new, dropped, changed. A patch
    rewritten beyond recognition shows as dropped and new under one
    subject: that is a rewrite."""
    seen, seen_at, kind, subject = {}, {}, [], []
    for line in text.splitlines():
        f = line.split(None, 5)
        if len(f) < 3 or f[2] == "=":
            continue
        subj = f[5] if len(f) > 5 else ""
        what = {">": "new", "<": "dropped"}.get(f[2], "changed")
        if subj in seen and seen[subj] != what:
            kind[seen_at[subj]] = "rewritten"
            continue
        seen[subj] = what
        seen_at[subj] = len(kind)
        kind.append(what)
        subject.append(subj)
    if not kind:
        return [" - no change in the patches"]
    return [f" - {k}: {s}" for k, s in zip(kind, subject)]


def changes(v, range_diff=None, notes=None, tag="series"):
    """The "Changes in vN" section, blank line included; nothing for v1.
    range_diff is None when there is no tag-v(N-1) to compare with."""
    if v == 1:
        return ""
    out = [f"Changes in v{v}:"]
    if range_diff is None:
        out += [f" - no tag {tag}-v{v - 1} in the tree, so no range-diff "
                "against",
                f"   v{v - 1} (tag what was sent as v{v - 1} to get one)."]
    else:
        # The notes of CHANGES=, indented like the list below them.
        lines = (notes or "").split("\n")
        if lines[-1] == "":
            lines.pop()
        out += [f" {line}" for line in lines]
        out += range_diff_summary(range_diff)
        out.append(f" (range-diff against v{v - 1} at the end of this "
                   "letter)")
    return "\n".join(out) + "\n\n"


def based_on(fixes_subject, subjects):
    """The feature's cover letter on the fixes series it is based on:
    fixes_subject is that series' cover letter subject, subjects its
    patches'. Nothing when there are no fixes."""
    subjects = [s for s in subjects if s]
    if not subjects:
        return ""
    n = len(subjects)
    return (f"This series is based on the fixes series\n"
            f"\"{fixes_subject}\"\n"
            f"({n} patch{'es' if n > 1 else ''}, sent before it as a thread "
            "of its own), which fixes\n"
            "bugs of Linux itself; the prerequisite-patch-id lines at the "
            "end name\n"
            f"{'them' if n > 1 else 'it'}:\n\n"
            + "".join(f"  {s}\n" for s in subjects) + "\n")


def fill_cover(text, subject, blurb):
    text = text.replace("*** SUBJECT HERE ***", subject, 1)
    text = text.replace("*** BLURB HERE ***\n", blurb, 1)
    if re.search(r"\*\*\* (SUBJECT|BLURB) HERE", text):
        raise Refusal("the cover letter still has a *** ... HERE *** "
                      "placeholder")
    return text


def read(path):
    with open(path) as f:
        return f.read()


def main(argv):
    ap = argparse.ArgumentParser(prog="send_prep.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("reserved")
    p.add_argument("address")
    p = sub.add_parser("recipients")
    p.add_argument("--gm", required=True)
    p.add_argument("--people", required=True)
    p.add_argument("--sender", required=True)
    p.add_argument("--to", default="")
    p.add_argument("--cc", default="")
    p.add_argument("--out", required=True)
    p = sub.add_parser("changes")
    p.add_argument("version", type=int)
    p.add_argument("--tag", default="series")
    p.add_argument("--range-diff")
    p.add_argument("--notes")
    p = sub.add_parser("based-on")
    p.add_argument("--subjects", required=True)
    p.add_argument("fixes_subject")
    p = sub.add_parser("fill-cover")
    p.add_argument("cover")
    p.add_argument("subject")
    p.add_argument("blurb")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "reserved":
            return 0 if reserved(a.address) else 1
        if a.cmd == "recipients":
            to, cc, skipped = recipients(
                read(a.gm).splitlines(), read(a.people).splitlines(),
                a.sender, extra("TO", a.to), extra("CC", a.cc))
            with open(a.out, "w") as f:
                f.write(recipients_text(to, cc, skipped))
            sys.stdout.write("".join(f"to\t{w}\n" for w in to) +
                             "".join(f"cc\t{w}\n" for w in cc))
        elif a.cmd == "changes":
            notes = None
            if a.range_diff is not None and a.notes:
                try:
                    notes = read(a.notes)
                except FileNotFoundError:
                    raise Refusal(f"CHANGES={a.notes}: no such file") from None
            rd = None if a.range_diff is None else read(a.range_diff)
            sys.stdout.write(changes(a.version, rd, notes, a.tag))
        elif a.cmd == "based-on":
            sys.stdout.write(based_on(a.fixes_subject,
                                      read(a.subjects).splitlines()))
        else:
            try:
                text = fill_cover(read(a.cover), a.subject, read(a.blurb))
            except Refusal:
                raise Refusal(f"could not fill in the cover letter "
                              f"{a.cover}") from None
            with open(a.cover, "w") as f:
                f.write(text)
    except Refusal as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
