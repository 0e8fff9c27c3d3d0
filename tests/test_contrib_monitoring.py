"""contrib/prometheus and contrib/alertmanager: the shipped rules and routing pass the real tools.

promtool (Debian `prometheus`) and amtool (Debian `prometheus-alertmanager`) are installed by
.ci/run; without them these tests skip and say why.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROM = ROOT / "contrib" / "prometheus"
AM = ROOT / "contrib" / "alertmanager" / "alertmanager.yml"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (apt-get install prometheus prometheus-alertmanager)")
    return path


def _run(*cmd: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_promtool_check_rules() -> None:
    out = _run(_tool("promtool"), "check", "rules", "dbwatch-rules.yml", cwd=PROM)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 10 rules found" in out.stdout


def test_promtool_rule_unit_tests() -> None:
    out = _run(_tool("promtool"), "test", "rules", "dbwatch-rules.test.yml", cwd=PROM)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_every_alert_has_a_firing_unit_test() -> None:
    rules = (PROM / "dbwatch-rules.yml").read_text()
    tests = (PROM / "dbwatch-rules.test.yml").read_text()
    names = {line.split(":", 1)[1].strip() for line in rules.splitlines()
             if line.strip().startswith("- alert:")}
    assert len(names) >= 9
    firing = set()
    for case in tests.split("- eval_time:")[1:]:
        head = case.split("alertname:", 1)[1].splitlines()[0].strip()
        if "exp_labels" in case:
            firing.add(head)
    assert names <= firing, f"alerts without a firing test case: {sorted(names - firing)}"


def test_prometheus_example_config() -> None:
    out = _run(_tool("promtool"), "check", "config", "prometheus.yml", cwd=PROM)
    assert out.returncode == 0, out.stdout + out.stderr


def test_alertmanager_config_valid() -> None:
    out = _run(_tool("amtool"), "check-config", str(AM))
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        (["alertname=PG201", "severity=critical", "source=dbwatch", "target=pg"], "dbwatch-pager"),
        (["alertname=QU001", "severity=warning", "source=dbwatch", "target=my"], "dbwatch-queues"),
        (["alertname=PG002", "severity=warning", "source=dbwatch", "action=terminated"],
         "dbwatch-actions"),
        (["alertname=DW002", "severity=warning", "source=dbwatch"], "dbwatch-default"),
        (["alertname=DbwatchDown", "severity=critical", "source=prometheus"], "dbwatch-pager"),
    ],
)
def test_alertmanager_routes(labels: list[str], receiver: str) -> None:
    amtool = _tool("amtool")
    out = _run(amtool, "config", "routes", "test", f"--config.file={AM}", *labels)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == receiver
