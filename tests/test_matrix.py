"""make matrix (ci/checks/matrix.py): its rows and its judgement of W=1
warnings, on the host without building a kernel."""
import pytest

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


def test_randconfig_rows_come_back_from_the_seed_printed():
    rows, whole = matrix.pick([], 3, 20261129)
    again, _ = matrix.pick([], 3, 20261129)
    rand = [r for r in rows if r.target == "randconfig"]
    assert whole and len(rand) == 3
    assert [r.name for r in rand] == [r.name for r in again
                                      if r.target == "randconfig"]
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
