"""Each guest test (KUnit case, selftest case, run-level check) as a test."""
import pytest


def test_guest(case):
    if case.status == "skip":
        pytest.skip(case.message or "skipped in the guest")
    if case.status == "fail":
        pytest.fail(case.message or "failed in the guest", pytrace=False)
