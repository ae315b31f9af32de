"""make matrix (ci/checks/matrix.py): its rows and its judgement of W=1
warnings, on the host without building a kernel."""
import json
import os
import subprocess
import time
import types

import pytest

from ci.build import configs
from ci.checks import matrix


def test_rows_have_unique_names_and_a_debian_cross_compiler():
    names = [r.name for r in matrix.ROWS]
    assert len(names) == len(set(names))
    for r in matrix.ROWS:
        assert r.unwind in ("y", "n"), r.name
        assert bool(r.cross) == (r.karch != "x86_64"), r.name
        if r.cross:
            assert r.package == "gcc-" + r.cross.rstrip("-"), r.name
    # What the issue names: every 6.12 architecture with the generic entry
    # that Debian can cross-build, and powerpc without it.
    assert {r.karch for r in matrix.ROWS} == {"x86_64", "i386", "arm64",
                                              "riscv", "s390", "powerpc"}


def test_debians_rows_are_named_only_and_start_from_its_configs():
    """The full Debian builds take hours: not in a whole run, but named
    by --rows, and each starts from linux-config-6.12's file."""
    rows, whole = matrix.pick([], 0, 1)
    assert whole and not any(r.start for r in rows
                             if not isinstance(r, matrix.GuestRow))
    for r in matrix.DISTRO_ROWS:
        one, whole = matrix.pick([r.name], 0, 1)
        assert not whole and one == [r]
        assert r.start in (configs.BASES["debian"][r.karch],
                           configs.BASES["debian-rt"][r.karch]), r.start
        assert r.start.endswith(".xz") and \
            "/usr/src/linux-config-6.12/" in "/" + r.start, r.start
        # make deps installs amd64's; arm64's is fetched when first needed
        assert os.path.exists(r.start) or configs.fetch_base(r.start), \
            r.start
        assert r.target == "olddefconfig" and r.unwind == "y" and r.resume
    # Both architectures the issue names: amd64 (and its -rt) and arm64
    assert {r.karch for r in matrix.DISTRO_ROWS} == {"x86_64", "arm64"}


def test_a_missing_start_is_fetched_under_the_root_and_said(
        tmp_path, monkeypatch, capsys):
    """arm64's Debian configuration is fetched before the row's key is
    made: into the repository (ROOT), not the caller's directory, with
    the command said before and a failure said after."""
    row = next(r for r in matrix.DISTRO_ROWS if r.karch == "arm64")
    monkeypatch.setattr(matrix, "ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path.parent)
    got = tmp_path / row.start
    monkeypatch.setattr(configs, "fetch_base", lambda path: [
        "sh", "-c", f'mkdir -p "$(dirname {path})" && touch {path}'])
    matrix.fetch_start(row)
    assert got.exists()
    err = capsys.readouterr()
    said = err.out + err.err
    assert f"{row.name}: fetching {row.start}: sh -c" in said, said
    assert "failed" not in said, said
    got.unlink()
    monkeypatch.setattr(configs, "fetch_base", lambda path: ["false"])
    matrix.fetch_start(row)
    err = capsys.readouterr()
    assert f"fetching {row.start} failed: false" in err.out + err.err
    # There already: nothing run, nothing said
    got.touch()
    monkeypatch.setattr(configs, "fetch_base", lambda path: ["false"])
    matrix.fetch_start(row)
    err = capsys.readouterr()
    assert "fetching" not in err.out + err.err


def test_randconfig_rows_come_back_from_the_seed_printed():
    rows, whole = matrix.pick([], 3, 20261129)
    again, _ = matrix.pick([], 3, 20261129)
    rand = [r for r in rows if getattr(r, "seed", None) is not None]
    assert whole and len(rand) == 3
    # hours each: a stopped run is resumed (run_row)
    assert all(r.resume for r in rand)
    assert [r.name for r in rand] == [r.name for r in again
                                      if getattr(r, "seed", None)
                                      is not None]
    one, whole = matrix.pick([rand[1].name], 3, 1)
    assert not whole and one[0].seed == rand[1].seed
    with pytest.raises(ValueError, match="no row x86_64-fastconfig"):
        matrix.pick(["x86_64-fastconfig"], 0, 1)


def test_a_warning_counts_as_new_only_beyond_the_base_s():
    files = ["kernel/unwind/deferred.c", "kernel/events/core.c"]
    base = matrix.warnings(
        "kernel/events/core.c:100:5: warning: no previous prototype for 'f' "
        "[-Wmissing-prototypes]\n"
        "mm/memory.c:3:1: warning: unrelated\n", files)
    series = matrix.warnings(
        "kernel/events/core.c:130:5: warning: no previous prototype for 'f' "
        "[-Wmissing-prototypes]\n"
        "/abs/tree/kernel/unwind/deferred.c:7:2: warning: unused variable "
        "'x' [-Wunused-variable]\n"
        "kernel/events/core.c:140:5: warning: no previous prototype for 'f' "
        "[-Wmissing-prototypes]\n", files)
    # The moved warning is the base's; its second copy and the new file's
    # are new; mm/memory.c is not the series'.
    assert matrix.new_warnings(base, series) == [
        "kernel/unwind/deferred.c: warning: unused variable 'x' "
        "[-Wunused-variable]",
        "kernel/events/core.c: warning: no previous prototype for 'f' "
        "[-Wmissing-prototypes]"]



def test_objtool_warnings_count_for_the_objects_source_file_s():
    files = ["kernel/unwind/sframe.c"]
    base = matrix.warnings("kernel/unwind/user.o: warning: objtool: f+0x1a: "
                           "unreachable instruction\n", files)
    series = matrix.warnings(
        "kernel/unwind/sframe.o: warning: objtool: sframe_fde_find_row+0x3f5:"
        " call to __ubsan_handle_out_of_bounds() with UACCESS enabled\n",
        files)
    assert base == []
    # The offset moves with any change to the function: not compared.
    assert matrix.new_warnings(base, series) == [
        "kernel/unwind/sframe.c: warning: objtool: sframe_fde_find_row: "
        "call to __ubsan_handle_out_of_bounds() with UACCESS enabled"]


FAKE_MAKE = r'''#!/bin/sh
# make for matrix.py: configs write .config, all makes an object per C
# file of the tree, W=1 prints each "//warn X" line of a target's source
# as gcc would.
obj= w1=
for a; do case $a in O=*) obj=${a#O=} ;; W=1) w1=1 ;; esac; done
for a; do
	case $a in
	defconfig) echo CONFIG_UNWIND_USER=y >"$obj/.config" ;;
	all) for c in *.c; do : >"$obj/${c%.c}.o"; done ;;
	*.o) [ -n "$w1" ] && sed -n "s|^//warn \(.*\)|${a%.o}.c:3:1: warning: \1|p" \
		"${a%.o}.c" >&2 ;;
	esac
done
exit 0
'''


def fake_make(tmp_path, monkeypatch, script):
    """SCRIPT as the make on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "make").write_text(script)
    (bindir / "make").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")


def git(tree, *args):
    subprocess.run(["git", "-C", str(tree), "-c", "user.name=t", "-c",
                    "user.email=t@t", *args], check=True, capture_output=True)


def test_a_row_fails_on_the_warnings_its_files_add_to_the_base_s(
        tmp_path, monkeypatch):
    """One row on a fake tree and make: the W=1 warnings of the series'
    files are compared with the base's build of the same objects."""
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "a.c").write_text("//warn old\n")
    (tree / "c.c").write_text("//warn untouched\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", "base")
    git(tree, "tag", "vmtest-base")
    (tree / "a.c").write_text("//warn old\n//warn new in a\n")
    (tree / "b.c").write_text("//warn new file\n")
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", "series")
    fake_make(tmp_path, monkeypatch, FAKE_MAKE)
    monkeypatch.setattr(matrix, "OUT", str(tmp_path / "out"))
    monkeypatch.setattr(matrix, "BUILD", str(tmp_path))
    base = matrix.base_tree(str(tree))
    row = matrix.Row("fake-defconfig", "x86_64", "defconfig", unwind="y")
    sources = matrix.series_files(str(tree))
    assert sources == (["a.c", "b.c"], ["a.c"], [])
    # Left by another row (or a killed run) in the shared object directory
    stale = tmp_path / "out" / "obj" / "series" / "stale.o"
    stale.parent.mkdir(parents=True)
    stale.write_text("")
    r = matrix.run_row(row, str(tree), base, sources, cc_cache=False)
    matrix.finish_row(row)
    assert r["built"] == "yes" and r["unwind"] == "y", r
    assert r["new"] == ["a.c: warning: new in a", "b.c: warning: new file"]
    assert r["problems"] == ["2 new W=1 warning(s)"], r["problems"]
    # Every row builds in one place (ccache hits across rows); its
    # objects go, its .config and logs stay with the row.
    d = tmp_path / "out" / "fake-defconfig"
    assert f"O={tmp_path}/out/obj/series " in (d / "series.log").read_text()
    assert not os.path.exists(stale) and \
        not os.path.exists(tmp_path / "out" / "obj" / "series")
    assert "CONFIG_UNWIND_USER=y" in (d / "series.config").read_text()


# FAKE_MAKE, but all compiles only the objects missing, and says which
COMPILED = 'all) for c in *.c; do : >"$obj/${c%.c}.o"; done ;;'
assert COMPILED in FAKE_MAKE
FAKE_MAKE_INCREMENTAL = FAKE_MAKE.replace(COMPILED, (
    'all) for c in *.c; do [ -e "$obj/${c%.c}.o" ] || '
    '{ : >"$obj/${c%.c}.o"; echo "$c" >>"$COMPILED"; }; done ;;'))


@pytest.fixture
def resuming(tmp_path, monkeypatch):
    """A tree of a.c and b.c, an incremental fake make whose make all
    takes 1000 s of a fake clock, and a row that resumes: (row, tree,
    stop, files compiled so far). stop(True) makes the next make all
    end as a SIGTERM ends the matrix (SystemExit out of run()). The
    row's state as make all found it is in row.seen."""
    tree = tmp_path / "linux"
    tree.mkdir()
    for c in ("a.c", "b.c"):
        (tree / c).write_text("int x;\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", "base")
    fake_make(tmp_path, monkeypatch, FAKE_MAKE_INCREMENTAL)
    compiled = tmp_path / "compiled"
    compiled.write_text("")
    monkeypatch.setenv("COMPILED", str(compiled))
    monkeypatch.setattr(matrix, "OUT", str(tmp_path / "out"))
    clock = [0]
    monkeypatch.setattr(matrix, "time",
                        types.SimpleNamespace(monotonic=lambda: clock[0]))
    real_run, stopping = matrix.run, []
    row = matrix.Row("fake-distro", "x86_64", "defconfig", unwind="y",
                     resume=True)
    state = tmp_path / "out" / "fake-distro" / "resume.json"

    def run(args, *a, **kw):
        if "all" in args:
            row.seen = json.loads(state.read_text())
        rc = real_run(args, *a, **kw)
        if "all" in args:
            clock[0] += 1000
            if stopping:
                raise SystemExit(143)
        return rc
    monkeypatch.setattr(matrix, "run", run)

    def stop(on):
        stopping[:] = [on] if on else []
    return row, tree, stop, lambda: compiled.read_text().split()


def build(row, tree, **kw):
    return matrix.run_row(row, str(tree), str(tree), ([], [], []),
                          cc_cache=False, **kw)


def test_a_row_that_resumes_goes_on_where_a_stopped_run_left_it(resuming):
    """Debian's full builds take longer than a session: stopped (SIGTERM
    ends the matrix through SystemExit), the row leaves its objects and
    its time, and the next run compiles only what is missing and reports
    the time of all its runs; once its result is saved, it leaves
    neither."""
    row, tree, stop, compiled = resuming
    assert all(r.resume for r in matrix.DISTRO_ROWS)
    # arm64's defconfig rows too (59-138 min cold each)
    assert all(r.resume for r in matrix.ROWS
               if (r.karch, r.target) == ("arm64", "defconfig"))
    stop(True)
    with pytest.raises(SystemExit):
        build(row, tree)
    assert compiled() == ["a.c", "b.c"]
    d = tree.parent / "out" / "fake-distro"
    (d / "series" / "b.o").unlink()
    stop(False)
    r = build(row, tree)
    assert r["built"] == "yes" and not r["problems"], r
    assert compiled() == ["a.c", "b.c", "b.c"]
    assert r["seconds"] == 2000  # two runs of make all
    # While it builds, its state says so (a run ended outright resumes)
    assert row.seen == {"seconds": 1000,
                        "key": matrix.resume_key(row, str(tree))}
    matrix.finish_row(row)
    assert not (d / "series").exists() and not (d / "resume.json").exists()
    assert (d / "series.config").exists()
    # Whether a row resumes is not part of what its result depends on
    assert "resume" not in matrix.row_key(row, str(tree))["row"]


def test_a_saved_result_used_again_clears_only_a_resuming_row_s_leftovers(
        tmp_path, monkeypatch):
    """A row whose saved result is used builds nothing: a resuming row's
    own directory loses what a stopped run left there (objects and
    state, no .config taken as this result's), and the shared directory,
    another row's, is not touched."""
    monkeypatch.setattr(matrix, "OUT", str(tmp_path))
    distro = matrix.Row("fake-distro", "x86_64", "defconfig", resume=True)
    plain = matrix.Row("fake-defconfig", "x86_64", "defconfig")
    for obj in (tmp_path / "fake-distro" / "series", tmp_path / "obj" /
                "series"):
        obj.mkdir(parents=True)
        (obj / ".config").write_text("CONFIG_X=y\n")
    (tmp_path / "fake-distro" / "resume.json").write_text("{}")
    matrix.finish_row(plain, ran=False)
    assert (tmp_path / "obj" / "series" / ".config").exists()
    assert not (tmp_path / "fake-defconfig" / "series.config").exists()
    matrix.finish_row(distro, ran=False)
    d = tmp_path / "fake-distro"
    assert not (d / "series").exists() and not (d / "resume.json").exists()
    assert not (d / "series.config").exists()


@pytest.mark.parametrize("left", ["no-state", "another-tree", "corrupt",
                                  "fresh"])
def test_a_row_resumes_only_objects_its_state_says_are_of_its_tree(
        resuming, left):
    """Objects are built again from nothing when no state says whose they
    are, when they are of another tree (they may look newer than the new
    sources), when the state cannot be read, or when FRESH=1 asks."""
    row, tree, stop, compiled = resuming
    d = tree.parent / "out" / "fake-distro"
    stop(True)
    with pytest.raises(SystemExit):
        build(row, tree)
    stop(False)
    if left == "no-state":
        (d / "resume.json").unlink()
    elif left == "another-tree":
        (tree / "a.c").write_text("int y;\n")
        git(tree, "commit", "-q", "-am", "another")
    elif left == "corrupt":
        (d / "resume.json").write_text("")
    r = build(row, tree, fresh=left == "fresh")
    assert compiled() == ["a.c", "b.c", "a.c", "b.c"]
    assert r["seconds"] == 1000 and r["built"] == "yes"


def test_a_rows_state_follows_its_build_while_it_runs(resuming):
    """A session's end may kill the matrix outright: the state is written
    again every so often while the build runs, not only at its end."""
    row, tree, stop, compiled = resuming
    d = tree.parent / "out" / "fake-distro"
    d.mkdir(parents=True)
    state = d / "resume.json"
    with matrix.keeping_state(row, str(tree), 5, every=0.01):
        assert json.loads(state.read_text())["seconds"] == 5
        matrix.time.monotonic = lambda: 100
        deadline = time.monotonic() + 60
        while json.loads(state.read_text())["seconds"] != 105:
            assert time.monotonic() < deadline, state.read_text()
            time.sleep(0.01)


def test_a_debian_rows_result_names_the_configuration_it_started_from(
        tmp_path, monkeypatch):
    """The path of Debian's configuration names no version, and the
    machine's linux-config-6.12 moves: its digest is in the key."""
    tree, git_ = one_commit_tree(tmp_path)
    monkeypatch.setattr(matrix, "RESULTS", str(tmp_path / "results"))
    start = tmp_path / "config.xz"
    start.write_bytes(b"one")
    row = matrix.Row("fake-debian", "x86_64", "olddefconfig",
                     start=str(start), unwind="y", resume=True)
    key = matrix.row_key(row, str(tree))
    matrix.save(row, key, {"row": row, "built": "yes", "new": [],
                           "unwind": "y", "problems": [], "seconds": 1,
                           "date": "2026-12-01T12:00"})
    assert matrix.cached(row, matrix.row_key(row, str(tree)))
    start.write_bytes(b"two")
    assert matrix.cached(row, matrix.row_key(row, str(tree))) is None
    # None there (a fetch failed): nothing saved, nothing matched
    start.unlink()
    assert matrix.row_key(row, str(tree)) is None
    # The other rows' keys (and their kept results) are as they were
    assert "start" not in matrix.row_key(matrix.ROWS[0], str(tree))


def test_guest_rows_are_in_a_whole_run_and_name_configs_of_the_table():
    """RT and Debian's configurations are booted, on both architectures,
    and each row is make vmtest of a CONFIG= the table has."""
    from ci.build import configs
    rows, whole = matrix.pick([], 0, 1)
    guests = [r for r in rows if isinstance(r, matrix.GuestRow)]
    assert whole and guests == matrix.GUEST_ROWS
    have = {(r.karch, r.config) for r in guests}
    for arch in ("x86_64", "arm64"):
        assert {(arch, "rt"), (arch, "rt-debug"), (arch, "debian")} <= have
    for r in guests:
        configs.make_vars(r.karch, r.config)  # raises for an unknown pair
        assert matrix.pick([r.name], 0, 1) == ([r], False)
    # the compilers every row of a whole run needs, guest rows too
    assert "gcc-aarch64-linux-gnu" in matrix.packages_of(guests)
    assert matrix.packages_of(matrix.pick(["x86_64-rt-guest"], 0, 1)[0]) \
        == []
    # what a build row's configuration may make the kernel's build run:
    # randconfig-0x3172f442 turned BUILTIN_MODULE_RANGES on, whose gawk a
    # machine without it lacked, and failed after 40 min of compiling
    for rows in (matrix.pick(["randconfig-0x3172f442"], 0, 1)[0],
                 matrix.pick(["x86_64-tinyconfig"], 0, 1)[0]):
        assert set(matrix.packages_of(rows)) >= {"gawk", "lz4", "lzop",
                                                 "zstd", "bzip2"}


def junit_of(passed, failed, skipped):
    """A junit.xml as ci/judge/vmtest writes it, with these cases."""
    case = '<testcase classname="test_guest" name="test_guest[selftests/' \
        't/T.{}]" time="0.001"'
    cases = [case.format(f"p{i}") + " />" for i in range(passed)]
    cases += [case.format(f"f{i}") + '><failure message="x" /></testcase>'
              for i in range(failed)]
    cases += [case.format(f"s{i}") + '><skipped message="x" /></testcase>'
              for i in range(skipped)]
    return ('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite '
            f'name="vmtest" errors="0" failures="{failed}" '
            f'skipped="{skipped}" tests="{passed + failed + skipped}">'
            + "".join(cases) + "</testsuite></testsuites>")


def fake_vmtest(tmp_path, junit, rc):
    """A run() that plays make vmtest: a run directory with the saved
    golden run's files, the log line naming it, exit RC."""
    rundir = tmp_path / "vmtest-x"
    rundir.mkdir()
    src = os.path.join(os.path.dirname(__file__), "data", "series", "normal")
    for f in ("kernel.config", "run.json"):
        (rundir / f).write_text(open(os.path.join(src, f)).read())
    (rundir / "junit.xml").write_text(junit)

    def run(args, cwd, log_path, env=None):
        assert args[:3] == ["make", "--no-print-directory", "vmtest"]
        with open(log_path, "a") as f:
            f.write(f"==> logs: {rundir}/{{console,results}}.log, JUnit: "
                    f"{rundir}/junit.xml\n")
        return rc
    return run


def test_a_guest_row_shows_what_its_run_did(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix, "OUT", str(tmp_path / "out"))
    # Shaped as make vmtest writes it (CONFIG=rt's counts)
    junit = junit_of(204, 0, 5)
    monkeypatch.setattr(matrix, "run", fake_vmtest(tmp_path, junit, 0))
    row = matrix.GuestRow("x86_64", "rt")
    r = matrix.run_guest_row(row, "/some/tree")
    want = "204 passed, 0 failed, 5 skipped"
    assert (r["built"], r["booted"], r["suite"], r["unwind"],
            r["problems"]) == ("yes", "yes", want, "y", [])
    line = matrix.table([r])[2]
    assert line.startswith("| x86_64-rt-guest | x86_64 | yes | - | - | y (y)"
                           f" | yes | {want} |"), line


def test_a_guest_row_that_fails_is_a_problem(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix, "OUT", str(tmp_path / "out"))
    junit = junit_of(7, 2, 1)
    monkeypatch.setattr(matrix, "run", fake_vmtest(tmp_path, junit, 1))
    r = matrix.run_guest_row(matrix.GuestRow("arm64", "debian"), "/t")
    assert r["suite"] == "7 passed, 2 failed, 1 skipped"
    assert len(r["problems"]) == 1 and "make vmtest failed" in \
        r["problems"][0]


def one_commit_tree(tmp_path):
    """A git tree with one commit of one file f, and the git command
    line that commits in it."""
    tree = tmp_path / "tree"
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c",
           "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (tree / "f").write_text("1\n")
    subprocess.run(git + ["add", "f"], check=True)
    subprocess.run(git + ["commit", "-qm", "1"], check=True)
    return tree, git


def test_a_rows_result_is_used_again_only_for_the_same_tree_and_row(
        tmp_path, monkeypatch):
    monkeypatch.setattr(matrix, "OUT", str(tmp_path / "out"))
    monkeypatch.setattr(matrix, "RESULTS", str(tmp_path / "results"))
    tree, git = one_commit_tree(tmp_path)
    row = matrix.ROWS[0]
    key = matrix.row_key(row, str(tree))
    res = {"row": row, "built": "yes", "new": [], "unwind": "n",
           "problems": [], "seconds": 60.0, "date": "2026-11-29T12:00"}
    matrix.save(row, key, res)
    again = matrix.cached(row, matrix.row_key(row, str(tree)))
    assert again["built"] == "yes" and again["row"] is row and \
        again["cached"] == "2026-11-29T12:00"
    assert matrix.cached(matrix.ROWS[1], matrix.row_key(matrix.ROWS[1],
                                                        str(tree))) is None
    # Uncommitted changes: nothing to name the result by
    (tree / "f").write_text("2\n")
    assert matrix.row_key(row, str(tree)) is None
    assert matrix.cached(row, None) is None
    subprocess.run(git + ["commit", "-qam", "2"], check=True)
    assert matrix.cached(row, matrix.row_key(row, str(tree))) is None
    # A commit that changes only what a kernel build never reads (perf,
    # the selftests, the documentation) keeps a build row's result, also
    # one saved before results named their sources; not a guest row's.
    key2 = matrix.row_key(row, str(tree))
    matrix.save(row, key2, res)
    for f in ("tools/perf/builtin-inject.c", "Documentation/x.rst",
              "tools/testing/selftests/y.c"):
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        (tree / f).write_text("3\n")
        subprocess.run(git + ["add", f], check=True)
    subprocess.run(git + ["commit", "-qm", "3"], check=True)
    assert matrix.cached(row, matrix.row_key(row, str(tree)),
                         str(tree))["built"] == "yes"
    old = {k: v for k, v in key2.items() if k != "sources"}
    matrix.save(row, old, res)
    assert matrix.cached(row, matrix.row_key(row, str(tree)),
                         str(tree))["built"] == "yes"
    assert matrix.cached(row, matrix.row_key(row, str(tree))) is None
    (tree / "tools/objtool.c").write_text("4\n")
    subprocess.run(git + ["add", "tools/objtool.c"], check=True)
    subprocess.run(git + ["commit", "-qm", "4"], check=True)
    matrix.save(row, key2, res)
    assert matrix.cached(row, matrix.row_key(row, str(tree)),
                         str(tree)) is None
    # A guest row's result depends on the harness's commit too
    g = matrix.GuestRow("x86_64", "rt")
    gkey = matrix.row_key(g, str(tree))
    assert gkey is None or gkey["harness"]


def test_results_are_kept_in_the_repository_and_outlive_the_machine(
        tmp_path, monkeypatch):
    """A row's result goes to doc/matrix/ROW.json (committed: the next
    session's machine has none of build/), and counts for a tree made
    again elsewhere: a guest row's for another commit of the same
    content (git am's commits differ by date), not for other content;
    no row's for another compiler."""
    assert matrix.RESULTS == os.path.join(matrix.ROOT, "doc", "matrix")
    monkeypatch.setattr(matrix, "RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(matrix, "harness_trees", lambda: ["a" * 40])
    tree, git = one_commit_tree(tmp_path)
    g = matrix.GuestRow("x86_64", "rt")
    key = matrix.row_key(g, str(tree))
    res = {"row": g, "built": "yes", "new": [], "unwind": "y",
           "problems": [], "seconds": 60.0, "date": "2026-11-29T12:00"}
    matrix.save(g, key, res)
    assert os.path.exists(tmp_path / "results" / "x86_64-rt-guest.json")
    # The same content committed again (another date): the same result
    subprocess.run(git + ["commit", "-q", "--amend", "-m", "1",
                          "--date=2001-01-01T00:00"], check=True,
                   env=dict(os.environ, GIT_COMMITTER_DATE="2001-01-01T00:00"))
    key2 = matrix.row_key(g, str(tree))
    assert key2["tree"] != key["tree"]
    assert matrix.cached(g, key2)["built"] == "yes"
    (tree / "f").write_text("2\n")
    subprocess.run(git + ["commit", "-qam", "2"], check=True)
    assert matrix.cached(g, matrix.row_key(g, str(tree))) is None
    # Another compiler: none
    row = matrix.ROWS[0]
    key = matrix.row_key(row, str(tree))
    matrix.save(row, key, dict(res, row=row))
    assert matrix.cached(row, key) is not None
    monkeypatch.setattr(matrix, "compiler", lambda cross: "gcc (Debian 99) 99")
    assert matrix.cached(row, matrix.row_key(row, str(tree))) is None


def test_a_guest_rows_key_covers_the_harness_it_runs():
    """Every file of ci/ that the guest, its judges and builds import or
    source is under GUEST_PARTS: a change to it (ci/console.py's verdict
    on an oops, 2026-11-30) must run a kept guest row again."""
    import re
    root = matrix.ROOT
    used = set()
    for part in ("ci/guest", "ci/judge", "ci/build"):
        for d, _, files in os.walk(os.path.join(root, part)):
            for f in files:
                text = open(os.path.join(d, f), errors="replace").read()
                for m in re.finditer(r"^\s*(?:from|import) (ci(?:\.\w+)+)",
                                     text, re.M):
                    mod = m.group(1).replace(".", "/")
                    used.add(mod + ".py" if os.path.exists(
                        os.path.join(root, mod + ".py")) else mod)
                if re.search(r'\.\./lib\.sh"', text) and \
                        os.path.dirname(os.path.join(d, f)) == \
                        os.path.join(root, part):
                    used.add("ci/lib.sh")
    assert used, "nothing found: the scan is broken"
    missing = sorted(u for u in used if not any(
        u == p or u.startswith(p + "/") for p in matrix.GUEST_PARTS))
    assert not missing, missing


def test_a_guest_rows_key_covers_the_makefile_it_runs(tmp_path, monkeypatch):
    """A guest row is make vmtest: the Makefile's recipe (its variables,
    timeouts, the scripts it calls) decides the run as much as the
    scripts do, so a change to it must run a kept guest row again."""
    ran = []
    monkeypatch.setattr(matrix, "OUT", str(tmp_path))
    monkeypatch.setattr(matrix, "run",
                        lambda args, cwd, logp, env=None: ran.append(
                            (args, cwd)) or 1)
    matrix.run_guest_row(matrix.GUEST_ROWS[0], str(tmp_path / "tree"))
    (args, cwd), = ran
    assert args[0] == "make" and cwd == matrix.ROOT
    assert "Makefile" in matrix.GUEST_PARTS


@pytest.mark.parametrize("burst", [False, True])
def test_a_stopped_matrix_stops_the_build_it_started(tmp_path, burst):
    """SIGTERM to make matrix (a session's end, a kill) ends what its row
    was running, make's own children too: a compiler left running beside
    the next kernel build was seen (2026-12-01). The signal goes to the
    matrix's process alone, which holds the build lock (no flock(1) in
    between, whose end would leave the matrix building), and the lock
    goes with it. BURST: SIGTERM again and again until it exits, as
    pkill -s sends one and make matrix's make passes its own on: one
    that came during the clean-up cut it short, and the kernel build
    went on alone (2026-12-04)."""
    import signal
    import sys
    import time
    make = tmp_path / "make"
    # a "make" whose "compiler" outlives it unless its group is stopped
    make.write_text("#!/bin/sh\nsleep 300 &\necho $! > %s\nwait\n"
                    % (tmp_path / "child.pid"))
    make.chmod(0o755)
    code = ("from ci.checks import matrix\nmatrix.exit_on_sigterm()\n"
            "matrix.lock.take(print)\n"
            f"matrix.run([{str(make)!r}], '.', {str(tmp_path / 'log')!r})\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lockf = tmp_path / "lock"
    env = dict(os.environ, VMTEST_LOCK=str(lockf))
    env.pop("VMTEST_BUILD_LOCKED", None)
    p = subprocess.Popen([sys.executable, "-c", code], cwd=root, env=env)
    pidfile = tmp_path / "child.pid"
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the fake make never started"
        time.sleep(0.1)
    child = int(pidfile.read_text())
    free = ["flock", "-n", str(lockf), "true"]
    assert subprocess.run(free).returncode == 1, "the lock is not held"
    p.send_signal(signal.SIGTERM)
    while burst and p.poll() is None:
        p.send_signal(signal.SIGTERM)
    assert p.wait(60) == 143
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{child}") and \
            open(f"/proc/{child}/stat").read().split()[2] != "Z":
        assert time.monotonic() < deadline, "the build's child still runs"
        time.sleep(0.1)
    assert subprocess.run(free).returncode == 0, "the lock outlived it"


def test_a_whole_table_has_debians_saved_full_builds_and_names_the_rest(
        tmp_path, monkeypatch, capsys):
    """A whole run does not build Debian's rows (hours each, by name) but
    its table has their results for the same tree, says their failures,
    and names those that have none (without fetching Debian's
    configuration for them)."""
    monkeypatch.setattr(matrix, "RESULTS", str(tmp_path / "results"))
    tree, git = one_commit_tree(tmp_path)
    built = matrix.Row("fake-debian", "x86_64", "olddefconfig", resume=True)
    broken = matrix.Row("fake-debian-arm", "x86_64", "olddefconfig",
                        resume=True)
    never = matrix.Row("fake-debian-rt", "x86_64", "olddefconfig",
                       resume=True, start="nowhere.xz")
    monkeypatch.setattr(matrix, "DISTRO_ROWS", [built, broken, never])
    fetched = []
    monkeypatch.setattr(matrix, "fetch_start",
                        lambda row: fetched.append(row.name))
    res = {"row": built, "built": "yes", "new": [], "unwind": "y",
           "problems": [], "seconds": 3600.0, "date": "2026-12-01T23:00"}
    matrix.save(built, matrix.row_key(built, str(tree)), res)
    matrix.save(broken, matrix.row_key(broken, str(tree)),
                dict(res, row=broken, built="no",
                     problems=["the series does not build"]))
    found, missing = matrix.distro_results(str(tree))
    assert [r["row"].name for r in found] == ["fake-debian",
                                              "fake-debian-arm"]
    assert found[0]["built"] == "yes" and missing == ["fake-debian-rt"]
    assert fetched == ["fake-debian", "fake-debian-arm"]
    assert "FAIL: fake-debian-arm (saved 2026-12-01T23:00): the series " \
        "does not build" in capsys.readouterr().err
    found = found[:1]
    lines = matrix.table(found, missing)
    assert lines[2].startswith("| fake-debian | x86_64 | yes |"), lines
    assert "no result for this tree: fake-debian-rt (make matrix " \
        "ROWS=NAME" in lines[-1]
    # doc/matrix.md says how to make the table again
    doc = tmp_path / "matrix.md"
    matrix.write_doc(str(doc), str(tree), found, lines, 20261201)
    text = doc.read_text()
    assert "`make matrix SEED=20261201` makes this table again" in text
    assert "2026-12-01T23:00 to 2026-12-01T23:00" in text
    assert "\n".join(lines) in text and "60 min in all" in text
    assert "(the series on Linux" not in text  # no base tagged
    # the base's release, from the tagged base's Makefile
    (tree / "Makefile").write_text(
        "# SPDX\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n"
        "EXTRAVERSION =\nNAME = Baby Opossum Posse\n")
    subprocess.run(git + ["add", "Makefile"], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    subprocess.run(git + ["tag", matrix.BASE_TAG], check=True)
    (tree / "f").write_text("2\n")
    subprocess.run(git + ["commit", "-qam", "the series"], check=True)
    matrix.write_doc(str(doc), str(tree), found, lines, 20261201)
    assert "the series (the series on Linux 6.12.118)" in doc.read_text()
    matrix.write_doc(str(doc), str(tree), found, lines, 7, 5)
    assert "`make matrix SEED=7 RANDCONFIGS=5` makes" in doc.read_text()


def test_a_run_names_the_stopped_rows_it_does_not_resume(tmp_path,
                                                         monkeypatch):
    """A randconfig row of another SEED (or a Debian row not named) left
    gigabytes of objects to resume: the run that does not pick it names
    it."""
    monkeypatch.setattr(matrix, "OUT", str(tmp_path))
    monkeypatch.setattr(matrix, "tree_content", lambda tree, c: "T1")
    for name in ("randconfig-0x1", "randconfig-0x2", "randconfig-0x3",
                 "randconfig-0x4", "obj"):
        (tmp_path / name).mkdir()
    state = {"seconds": 5, "key": {"content": "T1"}}
    for name in ("randconfig-0x1", "randconfig-0x2"):
        (tmp_path / name / "resume.json").write_text(json.dumps(state))
    # objects of another tree: a run of the row starts over
    state["key"]["content"] = "T0"
    (tmp_path / "randconfig-0x3" / "resume.json").write_text(
        json.dumps(state))
    (tmp_path / "randconfig-0x4" / "resume.json").write_text("{")
    rows = [matrix.randconfig_row(2)]
    assert matrix.stopped_elsewhere(rows, "tree") == [
        ("randconfig-0x1", True), ("randconfig-0x3", False),
        ("randconfig-0x4", False)]


def test_w1_compiles_again_an_object_a_stopped_run_compiled_at_w1(
        tmp_path, monkeypatch):
    """A resumed row's base runs only prepare and the W=1 compiles: an
    object a stopped run had already compiled at W=1 is up to date for
    kbuild, so w1() removes it (and its .cmd) or its warnings would be
    missing and the series' same ones counted as new."""
    tree = tmp_path / "linux"
    (tree / "kernel").mkdir(parents=True)
    (tree / "kernel" / "a.c").write_text("//warn old\n")
    obj = tmp_path / "obj"
    (obj / "kernel").mkdir(parents=True)
    (obj / "kernel" / "a.o").write_text("")
    (obj / "kernel" / ".a.o.cmd").write_text("")
    # as kbuild: an object with its .cmd is not compiled again
    fake_make(tmp_path, monkeypatch, FAKE_MAKE.replace(
        '*.o) [ -n "$w1" ] &&',
        '*.o) [ ! -e "$obj/$a" ] && : >"$obj/$a" && [ -n "$w1" ] &&'))
    row = matrix.Row("fake-defconfig", "x86_64", "defconfig")
    text, problem = matrix.w1(row, str(tree), str(obj), ["kernel/a.o"],
                              str(tmp_path / "base.log"), cc_cache=False)
    assert problem is None
    assert "kernel/a.c:3:1: warning: old" in text, text


def test_the_matrix_builds_with_the_guest_kernels_ccache_settings(
        tmp_path, monkeypatch):
    """ccache's depend mode (cold: 99 s against 138 s in its default mode)
    and the rest of what use_kernel_cc exports, read from ci/build/lib.sh
    itself: the real one, then one that says otherwise."""
    env = matrix.kernel_cc_env()
    assert env["CCACHE_DEPEND"] == "1"
    assert env["CCACHE_BASEDIR"] == matrix.ROOT
    assert env["KBUILD_BUILD_USER"] == "vmtest"
    assert not [k for k in env if not k.startswith(("CCACHE_", "KBUILD_"))]
    lib = tmp_path / "ci" / "build" / "lib.sh"
    lib.parent.mkdir(parents=True)
    lib.write_text("use_kernel_cc() { export CCACHE_DEPEND=0 OTHER=1; }\n")
    monkeypatch.setattr(matrix, "ROOT", str(tmp_path))
    assert matrix.kernel_cc_env() == {"CCACHE_DEPEND": "0"}
    lib.write_text("use_kernel_cc() { return 1; }\n")
    assert matrix.kernel_cc_env() == {}


def test_status_says_which_rows_a_run_would_use_again_or_build(
        tmp_path, monkeypatch):
    """make matrix STATUS=1 builds nothing: each row's saved result a run
    would use (passed or FAILED), or why the run would build it (none,
    stale and what changed, uncommitted changes), and a stopped run's
    objects to resume; exit 0 only when every row has a current passing
    result. A cross compiler not installed here counts as the result's
    (a run installs it)."""
    monkeypatch.setattr(matrix, "OUT", str(tmp_path / "out"))
    monkeypatch.setattr(matrix, "RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(matrix, "harness_trees", lambda: ["a" * 40])
    tree, git = one_commit_tree(tmp_path)
    t = str(tree)
    by = {r.name: r for r in matrix.ROWS}
    passed, failed, cross, stale, none = (by[n] for n in (
        "x86_64-tinyconfig", "x86_64-allnoconfig", "i386-defconfig",
        "x86_64-defconfig", "x86_64-defconfig-ubsan"))
    res = {"built": "yes", "new": [], "unwind": "n", "problems": [],
           "seconds": 120.0, "date": "2026-12-04T12:00"}
    matrix.save(passed, matrix.row_key(passed, t), dict(res, row=passed))
    matrix.save(failed, matrix.row_key(failed, t),
                dict(res, row=failed, problems=["3 new W=1 warnings"]))
    matrix.save(cross, dict(matrix.row_key(cross, t), compiler="gcc 1"),
                dict(res, row=cross))
    key = matrix.row_key(stale, t)
    matrix.save(stale, dict(key, sources=key["sources"] + " x"),
                dict(res, row=stale))
    os.makedirs(tmp_path / "out" / none.name)
    with open(tmp_path / "out" / none.name / "resume.json", "w") as f:
        json.dump({"seconds": 600, "key": matrix.resume_key(none, t)}, f)
    real = matrix.compiler
    monkeypatch.setattr(matrix, "compiler", lambda c: "none" if c ==
                        cross.cross else real(c))

    lines, done = matrix.status([passed, failed, cross, stale, none], t)
    rows = {ln.split(" | ")[0][2:]: ln for ln in lines[2:]}
    assert not done
    assert "| passed (2026-12-04T12:00, 2.0 min) | - |" in rows[passed.name]
    assert "| FAILED (2026-12-04T12:00" in rows[failed.name]
    assert "passed (" in rows[cross.name] and \
        "not installed here: counts if a run installs the result's " \
        "gcc 1" in rows[cross.name]
    assert "| stale: its kernel sources changed since the saved result " \
        "(a run builds it) |" in rows[stale.name]
    assert "| none | 10 min built |" in rows[none.name]
    assert matrix.status([passed, cross], t)[1]
    assert not matrix.status([passed, failed], t)[1]
    # A stopped run of another tree; a result that is no saved result; a
    # Debian row whose configuration is not fetched; a guest row while
    # the harness has uncommitted changes
    with open(tmp_path / "out" / none.name / "resume.json", "w") as f:
        json.dump({"seconds": 600, "key": dict(
            matrix.resume_key(none, t), content="0" * 40)}, f)
    with open(matrix.result_path(stale), "w") as f:
        f.write("[1]\n")
    deb = next(r for r in matrix.DISTRO_ROWS if r.name == "arm64-debian")
    monkeypatch.setattr(deb, "start", "no/such/config")
    matrix.save(deb, {"tree": "x"}, dict(res, row=deb))
    g = matrix.GuestRow("x86_64", "rt")
    matrix.save(g, matrix.row_key(g, t), dict(res, row=g))
    monkeypatch.setattr(matrix, "harness_trees", lambda: None)
    lines, done = matrix.status([none, stale, deb, g], t)
    assert not done
    assert lines[2].endswith("| none | of another tree, compiler or "
                             "configuration (a run starts over) |")
    assert "| unreadable: not a saved result" in lines[3]
    assert "| unknown: no/such/config not fetched (a run fetches it) |" \
        in lines[4]
    assert "| unknown: uncommitted changes in the harness a guest row " \
        "runs" in lines[5]
    (tree / "f").write_text("2\n")
    assert "uncommitted changes" in matrix.status([passed], t)[0][2]
    assert not matrix.status([passed], t)[1]
