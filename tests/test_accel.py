"""The KVM probe (ci/guest/accel.py) against fake QEMUs: KVM is used only
when it boots; an abort or a hang falls back to TCG with the reason."""
import os
import sys
import time

import pytest

from ci.guest import accel

FAKES = {
    # What a broken nested KVM does with -cpu host (seen on CI machines).
    "aborts": "echo 'qemu-system-x86_64: error: failed to set MSR 0x10a "
              "to 0x69' >&2\nkill -ABRT $$\n",
    # What it does with other CPU models: nothing, forever.
    "hangs": "sleep 60\n",
    "boots": "echo 'Linux version 6.12.0 (vmtest@vmtest)'\nsleep 60\n",
    "exits": "echo 'qemu-system-x86_64: -accel kvm: No accelerator "
             "found' >&2\nexit 1\n",
}


@pytest.fixture
def fake(tmp_path, monkeypatch):
    dev = tmp_path / "kvm"
    dev.write_text("")
    monkeypatch.setenv("VMTEST_KVM_DEV", str(dev))

    def make(kind):
        q = tmp_path / f"qemu-{kind}"
        q.write_text("#!/bin/sh\n" + FAKES[kind])
        q.chmod(0o755)
        return str(q)
    return make


def test_abort_falls_back_to_tcg_with_qemus_message(fake):
    acc, why = accel.choose("", fake("aborts"), "bzImage")
    assert acc == "tcg"
    assert "failed to set MSR 0x10a" in why


def test_hang_falls_back_to_tcg_within_the_probe_timeout(fake):
    t0 = time.monotonic()
    acc, why = accel.choose("", fake("hangs"), "bzImage", timeout=1)
    assert acc == "tcg"
    assert "no console output within 1 s" in why
    assert time.monotonic() - t0 < 5  # the hung QEMU was killed


def test_qemu_that_exits_falls_back(fake):
    acc, why = accel.choose("", fake("exits"), "bzImage")
    assert acc == "tcg" and "status 1" in why and "No accelerator" in why


def test_working_kvm_is_used(fake):
    acc, why = accel.choose("", fake("boots"), "bzImage")
    assert acc == "kvm", why
    assert "first console line" in why


def test_no_device_means_tcg_without_starting_qemu(monkeypatch, tmp_path):
    monkeypatch.setenv("VMTEST_KVM_DEV", str(tmp_path / "absent"))
    acc, why = accel.choose("", "/nonexistent/qemu", "bzImage")
    assert (acc, why) == ("tcg", f"no {tmp_path / 'absent'}")


def test_forced_accelerators_skip_the_probe(fake):
    assert accel.choose("tcg", fake("boots"), "x")[0] == "tcg"
    assert accel.choose("kvm", fake("aborts"), "x")[0] == "kvm"
    with pytest.raises(ValueError, match="ACCEL=kvm or ACCEL=tcg"):
        accel.choose("hvf", fake("boots"), "x")


def test_the_answer_is_kept_for_this_boot_of_the_host(fake, tmp_path):
    cache, hangs = str(tmp_path / "probe.json"), fake("hangs")
    t0 = time.monotonic()
    assert accel.choose("", hangs, "x", timeout=1, cache=cache)[0] == "tcg"
    assert time.monotonic() - t0 >= 1
    t0 = time.monotonic()
    acc, why = accel.choose("", hangs, "x", timeout=1, cache=cache)
    assert acc == "tcg" and "probed earlier" in why
    assert time.monotonic() - t0 < 0.5
    # Another QEMU binary is probed again.
    assert accel.choose("", fake("boots"), "x", cache=cache)[0] == "kvm"
