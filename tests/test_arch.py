"""The guest architecture: ARCH= of make picks ci/guest/<arch>.py and nothing
else does (ci/guest/arch.py); an unknown one is refused with exit 2 and
a message. Nothing is built or booted: make -n, vm.py's command, the
accelerator choice, kconfig.py against a fake make, the verdict of a
saved run."""
import argparse
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from ci.guest import accel
from ci.guest import arch as guest_arch
from ci.build import configs, kconfig
from ci.guest import vm
from ci.judge.vmtest import report


def make_n(*args):
    """make -n -s of the kernel target (prerequisites not looked at)."""
    return subprocess.run(["make", "-n", "-s", "--no-print-directory", "-C",
                           ROOT, "-o", "deps", "-o", "tree", "kernel", *args],
                          capture_output=True, text=True)


def test_arch_arm64_picks_qemu_arm64_py():
    assert guest_arch.load("arm64").__file__.endswith("ci/guest/arm64.py")
    assert guest_arch.load("aarch64").NAME == "arm64"
    assert guest_arch.load("").NAME == "x86_64"
    assert guest_arch.load("x86").NAME == "x86_64"


def test_make_arch_arm64_builds_its_own_kernel():
    p = make_n("ARCH=arm64")
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if "kernel.sh" in l)
    assert "/kobj-arm64-normal" in line and "--config normal" in line, line
    # The table gives each architecture its own fragment.
    frags = configs.fragments("normal", "arm64")
    assert "ci/guest/config/arm64.config" in frags, frags
    assert not any("x86_64.config" in f for f in frags), frags
    # x86_64 keeps its names and its own fragment.
    p = make_n()
    line = next(l for l in p.stdout.splitlines() if "kernel.sh" in l)
    assert "/kobj-normal" in line, line
    assert "ci/guest/config/x86_64.config" in configs.fragments("normal",
                                                                "x86_64")


def test_every_architecture_module_has_the_declared_shape():
    """A third architecture is one file of ci/guest/arch.py's SHAPE."""
    for name in guest_arch.KNOWN:
        assert guest_arch.shape_problems(guest_arch.load(name)) == [], name


def test_the_shape_check_names_what_is_missing_or_extra():
    class Mod:
        pass
    mod = Mod()
    for k, v in vars(guest_arch.load("x86_64")).items():
        setattr(mod, k, v)
    del mod.SMP
    mod.QEMU = ["qemu-system-x86_64"]
    mod.EXTRA = 1
    assert guest_arch.shape_problems(mod) == [
        "no SMP", "QEMU is a list, not a str",
        "EXTRA is not in ci/guest/arch.py's SHAPE"]


def test_make_refuses_an_unknown_arch_with_exit_2_and_a_message():
    p = make_n("ARCH=sparc64")
    assert p.returncode == 2
    assert "ARCH=sparc64: unknown guest architecture; use ARCH=x86_64 or " \
        "ARCH=arm64" in p.stderr, p.stderr
    assert "kernel.sh" not in p.stdout


def test_guest_arch_cli_refuses_unknown_arch_with_exit_2():
    p = subprocess.run([sys.executable, "-m", "ci.guest.arch",
                        "mips", "QEMU"], capture_output=True, text=True)
    assert p.returncode == 2 and "ARCH=mips: unknown" in p.stderr


def test_vm_py_refuses_unknown_arch(tmp_path):
    k = tmp_path / "Image"
    k.write_text("")
    rc = vm.main(["--kernel", str(k), "--initrd", str(k), "--out",
                  str(tmp_path / "run"), "--arch", "vax"])
    assert rc == 2


def arm64_command(tmp_path, stress=0):
    arch = guest_arch.load("arm64")
    a = argparse.Namespace(smp=2, mem="2G", kernel="Image", initrd="i.cpio",
                           out=str(tmp_path), jobs=2, filter="", bench="",
                           stress=stress, stress_args="")
    return vm.command(a, arch.QEMU, arch.TCG_ARGS, arch)


def test_only_the_stress_boot_switches_kmemleak_on(tmp_path):
    """The debug kernels build kmemleak in, off (stress.config): make
    stress's boot turns it on, a vmtest boot leaves it off; init fails a
    stress run whose kmemleak is off ("unavailable")."""
    append = arm64_command(tmp_path, stress=30)
    append = append[append.index("-append") + 1].split()
    assert "kmemleak=on" in append and "vmtest.stress=30" in append
    append = arm64_command(tmp_path)
    assert "kmemleak=on" not in append[append.index("-append") + 1].split()
    init = open(os.path.join(ROOT, "ci", "guest", "init")).read()
    assert "echo stack=on >$km; } 2>/dev/null || km=" in init
    # and again after the final scans: one it turned off meanwhile fails
    assert "{ echo scan >$km && echo scan >$km && echo stack=on >$km; }" \
        in init


def test_arm64_guest_is_virt_gicv3_cpu_max_with_pseudo_nmis(tmp_path):
    cmd = arm64_command(tmp_path)
    assert cmd[0] == "qemu-system-aarch64"
    assert cmd[cmd.index("-machine") + 1] == "virt,gic-version=3"
    assert cmd[cmd.index("-cpu") + 1].split(",")[0] == "max"
    append = cmd[cmd.index("-append") + 1].split()
    assert "irqchip.gicv3_pseudo_nmi=1" in append
    assert "console=ttyAMA0" in append


def test_arm64_results_channel_is_the_virtio_console_init_writes(tmp_path):
    cmd = arm64_command(tmp_path)
    append = cmd[cmd.index("-append") + 1].split()
    assert "vmtest.results=hvc0" in append
    assert f"file,id=results,path={tmp_path}/results.log" in cmd
    assert "virtconsole,chardev=results" in cmd
    # The console alone on the PL011 (the first -serial).
    assert cmd[cmd.index("-serial") + 1] == "chardev:console"
    assert cmd.count("-serial") == 1
    init = open(os.path.join(ROOT, "ci", "guest", "init")).read()
    assert 'results=$(param results)' in init


def test_arm64_guest_on_an_x86_host_is_tcg_without_a_probe(tmp_path,
                                                           monkeypatch):
    if os.uname().machine == "aarch64":
        pytest.skip("an aarch64 host may run the arm64 guest under KVM")
    # A QEMU whose KVM "boots": the x86_64 guest would take KVM.
    q = tmp_path / "qemu"
    q.write_text("#!/bin/sh\necho 'Linux version 6.12'\nsleep 60\n")
    q.chmod(0o755)
    dev = tmp_path / "kvm"
    dev.write_text("")
    monkeypatch.setenv("VMTEST_KVM_DEV", str(dev))
    acc, why = accel.choose("", str(q), "Image", timeout=5,
                            arch=guest_arch.load("arm64"))
    assert acc == "tcg" and "KVM runs it only on aarch64" in why, why
    with pytest.raises(ValueError, match="ACCEL=kvm: KVM cannot run"):
        accel.choose("kvm", str(q), "Image", arch=guest_arch.load("arm64"))
    assert accel.choose("", str(q), "Image", timeout=5)[0] == "kvm"


def fake_make(tmp_path, args=None):
    """A make for kconfig.py: copies the merged fragments (its
    KCONFIG_ALLCONFIG) to the config it is asked for, and writes its
    arguments to args if given."""
    fake = tmp_path / "make"
    record = f'echo "$@" >{args}\n' if args else ""
    fake.write_text("#!/bin/sh\n" + record + """\
for a; do case $a in O=*) o=${a#O=} ;; KCONFIG_ALLCONFIG=*) c=${a#*=} ;;
KCONFIG_CONFIG=*) n=${a#*=} ;; esac; done
cp "$c" "$o/$n"
""")
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_kconfig_takes_a_configuration_of_the_table(tmp_path, arch, capsys,
                                                   monkeypatch):
    """kconfig.py --config NAME: the table's fragments for the
    architecture, the series' one in its mode (a tree that defines none
    of its options leaves them out, said), then any given after it."""
    src = tmp_path / "src"
    src.mkdir()
    fake = fake_make(tmp_path)
    extra = tmp_path / "extra.config"
    extra.write_text("CONFIG_EXTRA_GIVEN=y\n")
    out = tmp_path / "obj"
    monkeypatch.chdir(ROOT)
    assert kconfig.main(["--src", str(src), "--out", str(out), "--make",
                         str(fake), "--arch", arch, "--config", "debug",
                         str(extra)]) == 0
    allconfig = (out / "vmtest.allconfig").read_text()
    for f in configs.fragments("debug", arch):
        if f.endswith(".config") and "series" not in f:
            first = next(l for l in open(f).read().splitlines()
                         if l.startswith("CONFIG_"))
            assert first in allconfig, (f, first)
    assert allconfig.rstrip().endswith("CONFIG_EXTRA_GIVEN=y")
    assert "does not define" in capsys.readouterr().out
    assert kconfig.main(["--src", str(src), "--out", str(out), "--make",
                         str(fake), "--arch", arch, "--config", "fast"]) == 2


def test_kconfig_configures_arm64_with_its_cross_make(tmp_path):
    """kconfig.py --arch arm64: arm64's tinyconfig fragments and Kbuild's
    ARCH=/CROSS_COMPILE= on the make that resolves the config."""
    src = tmp_path / "src"
    (src / "kernel" / "configs").mkdir(parents=True)
    (src / "kernel" / "configs" / "tiny.config").write_text("CONFIG_A=y\n")
    (src / "arch" / "x86" / "configs").mkdir(parents=True)
    (src / "arch" / "x86" / "configs" / "tiny.config").write_text(
        "CONFIG_X86_TINY=y\n")
    args = tmp_path / "args"
    fake = fake_make(tmp_path, args)
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_B=y\n")
    out = tmp_path / "obj"
    assert kconfig.main(["--src", str(src), "--out", str(out), "--make",
                         str(fake), "--arch", "arm64", str(frag)]) == 0
    words = args.read_text().split()
    assert "ARCH=arm64" in words
    assert "CROSS_COMPILE=aarch64-linux-gnu-" in words
    allconfig = (out / "vmtest.allconfig").read_text()
    assert "CONFIG_A=y" in allconfig and "CONFIG_X86_TINY" not in allconfig
    assert kconfig.main(["--src", str(src), "--out", str(out), "--make",
                         str(fake), "--arch", "m68k", str(frag)]) == 2


def test_left_out_programs_are_named_not_applicable(tmp_path):
    """What the arch leaves out of its guest is a not-applicable case and
    a summary line, never silent, and never a failure on a feature
    kernel."""
    (tmp_path / "run.json").write_text(json.dumps({"arch": "arm64"}))
    (tmp_path / "results.log").write_text("")
    (tmp_path / "kernel.config").write_text("CONFIG_UNWIND_USER=y\n")
    (tmp_path / "left_out.txt").write_text(
        "compat_test\tx86-only: ia32 compat tasks\n")
    rep = report.analyze(str(tmp_path))
    c = next(c for c in rep.cases if c.suite == "selftests/compat_test")
    assert c.status == "skip", c
    assert c.message.startswith("not applicable: left out of the arm64 "
                                "guest: x86-only"), c.message
    lines = report.summary(rep)
    assert any(l.startswith("left out of the arm64 guest: compat_test "
                            "(x86-only: ia32 compat tasks)") for l in lines), \
        lines


def test_left_out_globs_match_what_cmake_leaves_out():
    """arm64's LEFT_OUT names what selftests/CMakeLists.txt builds for
    x86 alone."""
    left = guest_arch.load("arm64").LEFT_OUT
    cm = open(os.path.join(ROOT, "selftests", "CMakeLists.txt")).read()
    assert 'name STREQUAL "compat_test"' in cm and "compat_test" in left
    assert "${name}_32" in cm and "*_32" in left
    assert 'name STREQUAL "ldt_stack"' in cm and "ldt_stack" in left
    # make bench runs on both (bench_tag.h holds what differs).
    assert "add_executable(bench " in cm and "bench" not in left


def test_kconfig_off_turns_an_option_off_last_and_says_so(tmp_path, capsys):
    """make KCONFIG_OFF=X (kconfig.py --off X): after every fragment."""
    src = tmp_path / "src"
    src.mkdir()
    fake = fake_make(tmp_path)
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_X_KUNIT_TEST=y\n")
    out = tmp_path / "obj"
    assert kconfig.main(["--src", str(src), "--out", str(out), "--make",
                         str(fake), "--off", "X_KUNIT_TEST", str(frag)]) == 0
    lines = (out / "vmtest.allconfig").read_text().splitlines()
    assert lines[-1] == "# CONFIG_X_KUNIT_TEST is not set", lines
    assert "CONFIG_X_KUNIT_TEST turned off (KCONFIG_OFF)" in \
        capsys.readouterr().out


def test_a_series_kunit_suite_built_off_fails_a_feature_kernel(tmp_path):
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "results.log").write_text("")
    (tmp_path / "kernel.config").write_text(
        "CONFIG_UNWIND_USER=y\nCONFIG_UNWIND_USER_KUNIT_TEST=y\n"
        "# CONFIG_UNWIND_DEFERRED_KUNIT_TEST is not set\n")
    rep = report.analyze(str(tmp_path))
    c = next(c for c in rep.cases if c.id == "kunit/unwind_deferred/result")
    assert c.status == "fail" and "CONFIG_UNWIND_DEFERRED_KUNIT_TEST is " \
        "not set" in c.message, c
    rep = report.analyze(str(tmp_path), expect="no")
    c = next(c for c in rep.cases if c.id == "kunit/unwind_deferred/result")
    assert c.status == "skip", c
