"""pytest glue: one pytest test per guest test (see test_guest.py)."""
from ci.judge.vmtest import report


def pytest_addoption(parser):
    parser.addoption("--vmtest-dir", help="directory written by ci/guest/vm.py")
    parser.addoption("--vmtest-config", help="the guest kernel's .config "
                     "(default: kernel.config in --vmtest-dir)")
    parser.addoption("--vmtest-expect-feature", default="auto",
                     choices=("yes", "no", "auto"),
                     help="a skipped feature test fails (yes), may skip "
                     "(no), or as the .config says (auto)")


def _report(config):
    if not hasattr(config, "_vmtest_report"):
        d = config.getoption("--vmtest-dir")
        config._vmtest_report = report.analyze(
            d, config.getoption("--vmtest-config"),
            config.getoption("--vmtest-expect-feature")) if d else None
    return config._vmtest_report


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        rep = _report(metafunc.config)
        cases = rep.cases if rep else []
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])


def pytest_terminal_summary(terminalreporter, config):
    rep = _report(config)
    if rep:
        terminalreporter.section("vmtest summary")
        for line in report.summary(rep):
            terminalreporter.write_line(line)


def pytest_sessionfinish(session, exitstatus):
    rep = _report(session.config)
    if rep and exitstatus == 0 and report.exit_code(rep) == 4:
        session.exitstatus = 4
