"""The browser gateway in docker-compose.yml and deploy/k8s/gateway.yaml, read as files and
checked against the code: its module and ports, TLS like the services, the origins it admits,
where it forwards each service, its Connect health probes, and the scraper finding /metrics.
(The real validators, docker-compose config, kubernetes-validate and promtool, run over the
same files in tests/unit/deploy/test_validators.py.)"""

from __future__ import annotations

from typing import Any

from services.gateway.settings import SERVICES as FORWARDED
from services.gateway.settings import GatewaySettings
from tests.unit.deploy.support import DEPLOY, HEALTHCHECK, K8S, SERVICES, compose, env_names
from tests.unit.deploy.test_kubernetes import objects, only_container, tls_mount, values

DEFAULTS = GatewaySettings()
PORT, METRICS_PORT = DEFAULTS.gateway_port, DEFAULTS.gateway_metrics_port
PROBE = [*HEALTHCHECK, "--connect", f"127.0.0.1:{PORT}"]
TARGETS = {
    f"BOULEVARD_GATEWAY_{name.upper()}_TARGET": f"{name}:{SERVICES[name].port}"
    for name in FORWARDED
}


def compose_gateway() -> dict[str, Any]:
    config: dict[str, Any] = compose()["services"]["gateway"]
    return config


def compose_env() -> dict[str, str]:
    return {str(k): str(v) for k, v in compose_gateway()["environment"].items()}


def k8s_gateway() -> dict[str, Any]:
    return objects("Deployment")["gateway"]


def test_compose_runs_the_gateway_module_on_its_port_after_the_four_services() -> None:
    config, env = compose_gateway(), compose_env()
    assert config["image"] == "boulevard:dev"
    assert config["command"] == ["services.gateway"]
    assert env["BOULEVARD_GATEWAY_PORT"] == str(PORT)
    assert env["BOULEVARD_GRPC_HOST"] == "0.0.0.0"
    assert f"127.0.0.1:{PORT}:{PORT}" in config["ports"]  # loopback only, like the services
    # It talks to the services, never to NATS, and holds no secret of theirs.
    assert config["depends_on"] == {n: {"condition": "service_healthy"} for n in FORWARDED}
    assert not {k for k in env if "NATS" in k or (k.endswith("_KEY") and "TLS" not in k)}
    assert {k: v for k, v in env.items() if k in TARGETS} == TARGETS


def test_compose_gateway_is_non_root_read_only_serves_tls_and_is_probed_over_connect() -> None:
    config, env = compose_gateway(), compose_env()
    assert str(config["user"]).split(":")[0] not in ("", "0", "root")
    assert config["read_only"] is True and config["cap_drop"] == ["ALL"]
    assert sorted(config["secrets"]) == ["tls-ca", "tls-cert", "tls-key"]
    assert env["BOULEVARD_TLS_CERT_FILE"] == "/run/secrets/tls-cert"
    assert env["BOULEVARD_TLS_KEY_FILE"] == "/run/secrets/tls-key"
    assert env["BOULEVARD_TLS_CA_FILE"] == "/run/secrets/tls-ca"
    assert config["healthcheck"]["test"] == ["CMD", *PROBE]


def test_compose_gateway_admits_its_published_https_origin_only() -> None:
    env = compose_env()
    settings = GatewaySettings(
        gateway_origins=env["BOULEVARD_GATEWAY_ORIGINS"], tls_cert_file="cert", tls_key_file="k"
    )
    assert settings.allowed_origins() == (f"https://127.0.0.1:{PORT}", f"https://localhost:{PORT}")


def test_every_gateway_variable_is_a_setting_of_the_gateway() -> None:
    known = env_names(GatewaySettings)
    assert not set(compose_env()) - known
    assert not set(values(only_container(k8s_gateway()))) - known


def test_the_gateway_metrics_are_scraped_in_compose_and_annotated_in_kubernetes() -> None:
    env = compose_env()
    assert env["BOULEVARD_METRICS_HOST"] == "0.0.0.0"
    assert env["BOULEVARD_GATEWAY_METRICS_PORT"] == str(METRICS_PORT)
    scrape = (DEPLOY / "prometheus" / "prometheus.yml").read_text()
    assert f'"gateway:{METRICS_PORT}"' in scrape
    template = k8s_gateway()["spec"]["template"]
    assert template["metadata"]["annotations"]["prometheus.io/port"] == str(METRICS_PORT)


def test_kubernetes_runs_the_gateway_behind_its_service_with_tls_and_connect_probes() -> None:
    workload = k8s_gateway()
    container = only_container(workload)
    assert container["image"] == "boulevard"
    assert container["args"] == ["services.gateway"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"https": PORT, "metrics": METRICS_PORT}
    env = values(container)
    assert env["BOULEVARD_GATEWAY_PORT"] == str(PORT)
    # The engine's replicas one by one (test_kubernetes.py checks the list), the others by
    # their Service.
    engine = "BOULEVARD_GATEWAY_ENGINE_TARGET"
    assert {k: v for k, v in env.items() if k in TARGETS and k != engine} == {
        k: v for k, v in TARGETS.items() if k != engine
    }
    assert len(GatewaySettings(gateway_engine_target=env[engine]).targets_of("engine")) == 2
    assert all(name in objects("Service") for name in FORWARDED)
    assert "valueFrom" not in str(container["env"])  # no secret but the TLS files
    where = tls_mount(workload)
    assert env["BOULEVARD_TLS_CERT_FILE"] == f"{where}/server.pem"
    assert env["BOULEVARD_TLS_KEY_FILE"] == f"{where}/server-key.pem"
    assert env["BOULEVARD_TLS_CA_FILE"] == f"{where}/ca.pem"
    # An explicit https origin: on 0.0.0.0 its own would be loopback, no use behind an Ingress.
    origins = GatewaySettings(gateway_origins=env["BOULEVARD_GATEWAY_ORIGINS"]).allowed_origins()
    assert origins and all(o.startswith("https://") for o in origins)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        alive = ["--alive"] if probe == "livenessProbe" else []
        assert container[probe]["exec"]["command"] == [*PROBE, *alive], probe
    (port,) = objects("Service")["gateway"]["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (PORT, "https")
    selector = objects("Service")["gateway"]["spec"]["selector"]
    assert selector.items() <= workload["spec"]["template"]["metadata"]["labels"].items()


def test_the_kustomization_lists_the_gateway() -> None:
    assert "gateway.yaml" in (K8S / "kustomization.yaml").read_text()
