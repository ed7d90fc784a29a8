"""The deployment files, checked by the real tools that will read them: promtool for the
Prometheus config and alert rules (and the alerts' own unit tests), docker-compose for the
compose file, kustomize + the Kubernetes schemas for deploy/k8s (nats-server -t checks the
NATS configs: tests/integration/deploy/test_nats_deploy_config.py). A test whose tool is
missing here skips and names the tool (.ci/run installs them); the dashboard and the alerts
may only name metrics the code exports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from boulevard.platform.metrics import metric_names
from tests.unit.deploy.support import DEPLOY, K8S, ROOT, SERVICES, manifests

PROMETHEUS = DEPLOY / "prometheus"
DASHBOARD = DEPLOY / "grafana" / "boulevard.json"
# Names a PromQL expression may use that are not metrics.
METRIC = re.compile(r"\b(?:boulevard|process)_[a-z0-9_]+\b")


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return path


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, capture_output=True, text=True, timeout=120, check=False, env=env, cwd=ROOT
    )


# Prometheus


def test_promtool_accepts_the_alert_rules_and_the_scrape_config() -> None:
    promtool = tool("promtool")
    rules = run(promtool, "check", "rules", str(PROMETHEUS / "alerts.yml"))
    assert rules.returncode == 0, rules.stdout + rules.stderr
    config = run(promtool, "check", "config", str(PROMETHEUS / "prometheus.yml"))
    assert config.returncode == 0, config.stdout + config.stderr


def test_each_alert_fires_on_trouble_and_not_on_health() -> None:
    promtool = tool("promtool")
    tested = run(promtool, "test", "rules", str(PROMETHEUS / "alerts_test.yml"))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout + tested.stderr


def test_promtool_rejects_a_broken_rule(tmp_path: Path) -> None:
    """The check above can fail: a rule with a PromQL syntax error does not pass."""
    promtool = tool("promtool")
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "groups:\n- name: x\n  rules:\n  - alert: X\n    expr: sum(rate(boulevard_x[5m])\n"
    )
    assert run(promtool, "check", "rules", str(broken)).returncode != 0


def alert_rules() -> list[dict[str, Any]]:
    loaded = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())
    return [rule for group in loaded["groups"] for rule in group["rules"]]


def test_the_alerts_cover_what_on_call_must_know() -> None:
    names = {rule["alert"] for rule in alert_rules()}
    assert {
        "BoulevardServiceNotServing",
        "BoulevardServiceDown",
        "BoulevardAppendLatencyHigh",
        "BoulevardLedgerRefusedEvents",
        "BoulevardLedgerReconciliationFailed",
        "BoulevardDiceVerificationFailed",
        "BoulevardGamesStalled",
    } <= names
    for rule in alert_rules():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    documented = (ROOT / "docs" / "operations.md").read_text()
    missing = sorted(n for n in names if n not in documented)
    assert not missing, f"alerts not explained in docs/operations.md: {missing}"


def dashboard_exprs() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def test_every_dashboard_panel_and_alert_names_metrics_the_code_exports() -> None:
    exported = metric_names()
    exprs = dashboard_exprs() + [(r["alert"], r["expr"]) for r in alert_rules()]
    assert len(exprs) > 20
    for where, expr in exprs:
        used = set(METRIC.findall(expr))
        assert used or "up{" in expr, f"{where}: names no Boulevard metric: {expr}"
        unknown = used - exported
        assert not unknown, f"{where}: {sorted(unknown)} are not exported"


def test_the_dashboard_shows_every_boulevard_metric() -> None:
    shown = {m for _, expr in dashboard_exprs() for m in METRIC.findall(expr)}
    families = {
        re.sub(r"_(total|bucket|sum|count|created)$", "", name)
        for name in metric_names()
        if name.startswith("boulevard_")
    }
    shown_families = {re.sub(r"_(total|bucket|sum|count)$", "", name) for name in shown}
    # the request-duration histogram shows through its buckets; every family appears.
    assert families <= shown_families, sorted(families - shown_families)


# docker compose


def compose_env() -> dict[str, str]:
    """The environment `docker compose --env-file deploy/secrets.env` would give."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOULEVARD_", "NATS_"))}
    for line in (DEPLOY / "secrets.env.example").read_text().splitlines():
        name, sep, _ = line.partition("=")
        if sep and not name.startswith("#"):
            env[name.strip()] = f"test-{name.strip().lower()}"
    return env


def compose_config(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    docker_compose = tool("docker-compose")
    # Debian's docker-compose (1.29) predates the top-level `name:` key of the Compose
    # Specification; everything else in the file is checked as written.
    text = (ROOT / "docker-compose.yml").read_text()
    copy = tmp_path / "docker-compose.yml"
    copy.write_text(re.sub(r"(?m)^name: .*$", "", text))
    return run(docker_compose, "--project-directory", str(ROOT), "-f", str(copy), "config", env=env)


def test_docker_compose_config_accepts_the_compose_file(tmp_path: Path) -> None:
    result = compose_config(tmp_path, compose_env())
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    assert {"nats", "prometheus", "gateway", *SERVICES} == set(resolved["services"])
    for name in [*SERVICES, "gateway"]:
        env = resolved["services"][name]["environment"]
        assert env["BOULEVARD_METRICS_HOST"] == "0.0.0.0"
        port = env[f"BOULEVARD_{name.upper()}_METRICS_PORT"]
        scrape = (PROMETHEUS / "prometheus.yml").read_text()
        assert f'"{name}:{port}"' in scrape, f"prometheus does not scrape {name}:{port}"


def test_docker_compose_refuses_to_run_without_a_secret(tmp_path: Path) -> None:
    env = compose_env()
    del env["BOULEVARD_TOKEN_KEY"]
    result = compose_config(tmp_path, env)
    assert result.returncode != 0
    assert "BOULEVARD_TOKEN_KEY" in result.stderr or "set it in" in result.stderr


# Kubernetes


def built_manifests() -> list[dict[str, Any]]:
    kubectl = tool("kubectl")
    built = run(kubectl, "kustomize", str(K8S))
    assert built.returncode == 0, built.stderr
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


def test_every_built_manifest_is_valid_against_the_kubernetes_schemas() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    docs = built_manifests()
    assert len(docs) >= 6
    version = kubernetes_validate.latest_version()
    for doc in docs:
        # strict: a misspelt or misplaced field is an error, not silently dropped
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_schema_check_catches_a_misplaced_field() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    deployment = next(d for d in built_manifests() if d["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, kubernetes_validate.latest_version(), True)


def test_every_service_pod_is_scraped_on_its_metrics_port() -> None:
    for _, doc in manifests():
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        if doc["metadata"]["name"] not in {*SERVICES, "gateway"}:
            continue
        name = doc["metadata"]["name"]
        template = doc["spec"]["template"]
        annotations = template["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        (container,) = template["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert int(annotations["prometheus.io/port"]) == ports["metrics"]
        assert int(env[f"BOULEVARD_{name.upper()}_METRICS_PORT"]) == ports["metrics"]
        assert env["BOULEVARD_METRICS_HOST"] == "0.0.0.0"
