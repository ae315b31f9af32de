"""selftests/perf_shell_test.sh on the host, judged as a guest run is: a
missing perf or shell-test directory fails on a kernel with the feature;
a perf tree without the series' shell tests (upstream's) does not."""
import os
import subprocess

from ci.judge.vmtest import ktap, report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "selftests", "perf_shell_test.sh")


def judged(env, feature):
    r = subprocess.run(["sh", SCRIPT], env={**os.environ, **env},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 4, r.stdout + r.stderr
    (t,) = ktap.parse(r.stdout).root.children
    assert t.status == "skip", r.stdout
    case = report.Case("selftests/perf_shell_test", t.name, t.status,
                       t.directive[4:].strip())
    report._expect([case], feature, True)
    return case


def test_missing_perf_fails_on_a_feature_kernel(tmp_path):
    env = {"PERF": str(tmp_path / "perf")}
    assert judged(env, True).status == "fail"
    assert judged(env, False).status == "skip"


def test_missing_shell_test_directory_fails_on_a_feature_kernel(tmp_path):
    env = {"PERF": "/bin/true", "PERF_SHELL_DIR": str(tmp_path / "none")}
    assert judged(env, True).status == "fail"


def test_a_perf_without_the_series_tests_is_not_applicable(tmp_path):
    env = {"PERF": "/bin/true", "PERF_SHELL_DIR": str(tmp_path)}
    case = judged(env, True)
    assert case.status == "skip", case.message
    assert case.message.startswith(report.NOT_APPLICABLE)
