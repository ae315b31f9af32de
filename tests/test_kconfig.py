"""The config validator: every requested option must survive Kconfig."""
import os

import pytest

from ci.build import kconfig

QEMU_CONFIG = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "ci", "guest", "config")


def test_parse_later_lines_win_and_unset_is_n():
    opts = kconfig.parse(["CONFIG_A=y", "# CONFIG_B is not set",
                          "CONFIG_A=m", "CONFIG_C=\"str\"", "junk"])
    assert opts == {"CONFIG_A": "m", "CONFIG_B": "n", "CONFIG_C": "\"str\""}


def test_missing_names_dropped_and_changed_options():
    requested = {"CONFIG_KASAN": "y", "CONFIG_SLUB_TINY": "n",
                 "CONFIG_NR_CPUS": "8", "CONFIG_ACPI": "y"}
    final = {"CONFIG_SLUB_TINY": "y", "CONFIG_NR_CPUS": "64",
             "CONFIG_ACPI": "y"}
    bad = kconfig.missing(requested, final)
    assert bad == [("CONFIG_KASAN", "y", "n"), ("CONFIG_SLUB_TINY", "n", "y"),
                   ("CONFIG_NR_CPUS", "8", "64")]
    text = kconfig.describe(bad)
    assert "CONFIG_KASAN: asked for y, .config has not set" in text
    assert "CONFIG_SLUB_TINY: asked for not set, .config has y" in text


def test_nothing_missing_when_all_survive():
    assert kconfig.missing({"CONFIG_A": "y", "CONFIG_B": "n"},
                           {"CONFIG_A": "y"}) == []


def test_debug_fragment_turns_off_slub_tiny():
    """tinyconfig's SLUB_TINY silently blocks KASAN."""
    lines = open(os.path.join(QEMU_CONFIG, "debug-checks.config")).read().splitlines()
    opts = kconfig.parse(lines)
    assert opts["CONFIG_KASAN"] == "y"
    assert opts["CONFIG_SLUB_TINY"] == "n"


def test_x86_fragment_keeps_acpi_for_smp():
    lines = open(os.path.join(QEMU_CONFIG, "guest.config")).read().splitlines()
    lines += open(os.path.join(QEMU_CONFIG, "x86_64.config")).read().splitlines()
    opts = kconfig.parse(lines)
    assert opts["CONFIG_ACPI"] == "y" and opts["CONFIG_SMP"] == "y"


def test_defined_symbols_reads_config_and_menuconfig(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "Kconfig").write_text(
        "config FOO\n\tbool \"foo\"\nmenuconfig BAR\n\tbool\n"
        "\t# config NOT_A_SYMBOL in a comment\n")
    (tmp_path / "sub" / "Kconfig.debug").write_text("  config BAZ_KUNIT\n")
    (tmp_path / "sub" / "Makefile").write_text("config QUX\n")
    assert kconfig.defined_symbols(str(tmp_path)) == {
        "CONFIG_FOO", "CONFIG_BAR", "CONFIG_BAZ_KUNIT"}



def test_stress_fragment_names_the_storms_options():
    """The io_uring and uprobe storms of make stress need these; named in
    stress.config, kconfig.py fails the stress kernel if one goes."""
    lines = open(os.path.join(QEMU_CONFIG, "stress.config")).read().splitlines()
    opts = kconfig.parse(lines)
    for name in ("CONFIG_IO_URING", "CONFIG_UPROBES", "CONFIG_UPROBE_EVENTS",
                 "CONFIG_DEBUG_KMEMLEAK", "CONFIG_HOTPLUG_CPU"):
        assert opts[name] == "y", name


def test_kcsan_fragment_has_kcsan_and_no_kasan():
    """KCSAN depends on !KASAN: make stress-kcsan's kernel is built
    without debug-checks.config."""
    lines = open(os.path.join(QEMU_CONFIG, "kcsan.config")).read().splitlines()
    opts = kconfig.parse(lines)
    assert opts["CONFIG_KCSAN"] == "y" and opts["CONFIG_DEBUG_KERNEL"] == "y"
    # allnoconfig turns its "default y" off: KCSAN would stay disabled
    assert opts["CONFIG_KCSAN_EARLY_ENABLE"] == "y"
    assert "CONFIG_KASAN" not in opts


def test_the_table_names_only_fragments_that_exist_for_every_arch():
    """ci/build/configs.py: every CONFIG= on every ARCH= starts with the
    common fragments, puts the series' one behind its mode switch, and
    names files that exist."""
    from ci.build import configs
    from ci.guest import arch
    root = os.path.dirname(QEMU_CONFIG.rsplit(os.sep, 2)[0])
    for name in arch.KNOWN:
        for config in configs.CONFIGS:
            if name not in configs.BASES.get(config, {name: ""}):
                with pytest.raises(ValueError, match=f"CONFIG={config}: "
                                   "only for ARCH=x86_64"):
                    configs.fragments(config, name)
                continue
            frags = configs.fragments(config, name)
            paths = [f for f in frags if not f.startswith("--")]
            # A fetched base exists once kconfig.py fetched it
            assert all(os.path.exists(os.path.join(root, f))
                       or configs.fetch_base(f) for f in paths), \
                (name, config, paths)
            common = [arch.load(name).GUEST_CONFIG,
                      "ci/guest/config/kunit-at-boot.config"]
            if config in configs.BASES:
                # Debian's configuration (make deps) instead of guest.config
                assert frags[0] == "--base" and paths[0] == \
                    configs.BASES[config][name], frags
                assert paths[0].startswith(configs.DEBIAN_CONFIGS) or \
                    configs.fetch_base(paths[0])[4:6] == ["trixie", "build/"
                                                          "debcfg/trixie-arm64"]
            else:
                assert paths[0] == "ci/guest/config/guest.config"
            assert paths[1:3] == common
            if "ci/guest/config/series.config" in frags:
                mode = frags[frags.index("ci/guest/config/series.config") - 1]
                assert mode == arch.load(name).SERIES_MODE
                assert configs.fragments(config, name, True)[
                    frags.index(mode)] == "--series-if-possible"
    assert configs.extra("debug") == ["ci/guest/config/debug-checks.config",
                                      "ci/guest/config/stress.config"]
    assert "ci/guest/config/series.config" not in \
        configs.fragments("nounwind", "x86_64")


def test_stress_boots_the_debug_kernel_which_has_kmemleak_off():
    """make stress boots the debug kernel (one kobj, one build in make
    check); kmemleak is built in but off until the stress boot's
    kmemleak=on (ci/guest/vm.py), so the debug guest runs without it."""
    from ci.build import configs
    for stress, kernel in (("stress", "debug"), ("stress-rt", "rt-debug")):
        assert configs.kernel_of(stress) == kernel
        for name in ("x86_64", "arm64"):
            assert configs.fragments(stress, name) == \
                configs.fragments(kernel, name)
            assert f"CONFIG_KERNEL := {kernel}" in \
                configs.make_vars(name, stress)
        assert "ci/guest/config/stress.config" in \
            configs.fragments(kernel, "x86_64")
    assert "CONFIG_KERNEL := debug" in configs.make_vars("x86_64", "debug")
    assert configs.kernel_of("normal") == "normal"
    opts = kconfig.parse(open(os.path.join(QEMU_CONFIG, "stress.config"))
                         .read().splitlines())
    assert opts["CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF"] == "y"


def test_base_lines_switch_modules_off_and_read_xz(tmp_path):
    """--base: a distribution's .config, compressed as Debian ships it;
    its modules are off (the guest boots none), the rest as it is."""
    import lzma
    from ci.build import kconfig
    text = ("CONFIG_MODULES=y\nCONFIG_VIRTIO_BLK=m\n# CONFIG_KUNIT is not set\n"
            'CONFIG_LSM="landlock,lockdown"\n')
    plain, packed = tmp_path / "config", tmp_path / "config.xz"
    plain.write_text(text)
    with lzma.open(packed, "wt") as f:
        f.write(text)
    want = ["CONFIG_MODULES=y", "# CONFIG_VIRTIO_BLK is not set",
            "# CONFIG_KUNIT is not set", 'CONFIG_LSM="landlock,lockdown"']
    assert kconfig.base_lines(str(plain)) == want
    assert kconfig.base_lines(str(packed)) == want


def test_a_missing_base_says_to_run_make_deps(tmp_path, capsys):
    from ci.build import kconfig
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_KUNIT=y\n")
    assert kconfig.main(["--src", str(tmp_path), "--out", str(tmp_path / "o"),
                         "--arch", "x86_64", "--base",
                         str(tmp_path / "nope.xz"), str(frag)]) == 2
    assert "run 'make deps'" in capsys.readouterr().err


def test_a_fetched_base_is_fetched_and_a_failed_fetch_named(
        tmp_path, capsys, monkeypatch):
    """arm64's Debian configurations are not the machine's: kconfig.py
    fetches the package at first use and names the command that failed."""
    from ci.build import configs, kconfig
    assert configs.fetch_base(configs.BASES["debian"]["arm64"]) == [
        "bash", "ci/build/fetch-deb.sh", "--arch", "arm64", "trixie",
        "build/debcfg/trixie-arm64", "linux-config-6.12"]
    assert configs.fetch_base(configs.BASES["debian"]["x86_64"]) is None
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_KUNIT=y\n")
    args = ["--src", str(tmp_path), "--out", str(tmp_path / "o"), "--arch",
            "arm64", "--base", str(tmp_path / "nope.xz"), str(frag)]
    monkeypatch.setattr(configs, "fetch_base", lambda path: ["false"])
    assert kconfig.main(args) == 2
    assert "fetching " + str(tmp_path / "nope.xz") + " failed: false" in \
        capsys.readouterr().err
    fetched = []
    monkeypatch.setattr(configs, "fetch_base",
                        lambda path: fetched.append(path) or ["true"])
    assert kconfig.main(args) == 2
    assert fetched == [str(tmp_path / "nope.xz")]
    assert "not found" in capsys.readouterr().err


def test_the_table_refuses_an_unknown_config_with_exit_2(capsys):
    from ci.build import configs
    assert configs.main(["make", "x86_64", "fast"]) == 2
    err = capsys.readouterr().err
    assert "CONFIG=fast: use CONFIG=normal, CONFIG=debug" in err, err
    assert configs.main(["make", "arm64", "debian"]) == 0
    assert "ARCH_NAME := arm64" in capsys.readouterr().out
    assert configs.main(["make", "x86_64", "debug"]) == 0
    out = capsys.readouterr().out
    assert "CONFIG_VM_TIMEOUT := 1500" in out and "ARCH_NAME := x86_64" in out
