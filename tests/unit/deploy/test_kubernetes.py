"""deploy/k8s, read as files (no cluster here): a three-node JetStream StatefulSet, a
Deployment (for the engine a StatefulSet whose replicas the gateway and matchmaking's bots
name one by one) and Service per Boulevard service on its port, streams with three replicas,
non-root read-only containers probed by the gRPC health check on the right port, and only
real setting names and real Secret keys in the environment."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from boulevard.messaging.identities import IDENTITIES
from services.matchmaking.settings import MatchmakingSettings
from tests.unit.deploy.support import (
    HEALTHCHECK,
    K8S,
    SERVICES,
    Service,
    conf_block,
    conf_setting,
    env_names,
    load_yaml_documents,
    manifests,
)

SECRET_NAME = "boulevard-secrets"
NOT_APPLIED = {"kustomization.yaml", "secret.example.yaml"}
REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def objects(kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for _, doc in manifests() if doc["kind"] == kind}


# The engine runs as a StatefulSet (stable replica names for routing by game id), the other
# services as Deployments.
STATEFUL = {"engine"}


def deployment(service: Service) -> dict[str, Any]:
    """The service's workload: its StatefulSet or its Deployment."""
    return objects("StatefulSet" if service.name in STATEFUL else "Deployment")[service.name]


def only_container(workload: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def pod_specs() -> list[tuple[str, dict[str, Any]]]:
    return [
        (doc["metadata"]["name"], doc["spec"]["template"]["spec"])
        for _, doc in manifests()
        if doc["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job")
    ]


def env_of(container: dict[str, Any]) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = container.get("env", [])
    return env


def values(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in env_of(container) if "value" in e}


def secret_keys_used(container: dict[str, Any]) -> dict[str, str]:
    used = {}
    for e in env_of(container):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref is not None:
            assert ref["name"] == SECRET_NAME, e
            used[e["name"]] = ref["key"]
    return used


def test_every_manifest_is_in_the_kustomization_except_the_secret_template() -> None:
    (kustomization,) = load_yaml_documents(K8S / "kustomization.yaml")
    files = {p.name for p in K8S.glob("*.yaml")} - NOT_APPLIED
    assert set(kustomization["resources"]) == files
    assert kustomization["namespace"] == "boulevard"
    for _, doc in manifests():
        namespace = doc.get("metadata", {}).get("namespace")
        assert namespace in (None, "boulevard"), doc["metadata"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_builds_every_object_into_the_namespace() -> None:
    built = subprocess.run(
        ["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    docs = [doc for doc in yaml.safe_load_all(built) if doc]
    expected = [doc for path, doc in manifests() if path.name not in NOT_APPLIED]
    assert len(docs) == len(expected)
    for doc in docs:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "boulevard", doc["metadata"]
    images = {
        c["image"]
        for doc in docs
        if doc["kind"] in ("Deployment", "StatefulSet")
        for c in doc["spec"]["template"]["spec"]["containers"]
    }
    assert images == {"boulevard:0.1.0", "nats:2.12"}


# NATS


def test_jetstream_runs_three_clustered_servers_with_a_volume_each() -> None:
    nats = objects("StatefulSet")["nats"]
    spec = nats["spec"]
    assert spec["replicas"] == 3
    assert spec["podManagementPolicy"] == "Parallel"
    (claim,) = spec["volumeClaimTemplates"]
    container = only_container(nats)
    assert {m["name"]: m["mountPath"] for m in container["volumeMounts"]}[
        claim["metadata"]["name"]
    ] == "/data"
    headless = objects("Service")[spec["serviceName"]]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert {p["port"] for p in headless["spec"]["ports"]} >= {4222, 6222}
    assert objects("Service")["nats"]["spec"]["ports"][0]["port"] == 4222


def test_the_nats_servers_run_the_shipped_cluster_config() -> None:
    nats = objects("StatefulSet")["nats"]
    container = only_container(nats)
    args = container["args"]
    config_path = Path(args[args.index("--config") + 1])
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == str(config_path.parent))
    volume = next(
        v for v in nats["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
    )
    config_map = objects("ConfigMap")[volume["configMap"]["name"]]
    assert config_path.name in config_map["data"]
    # Which file that is, and that it says `sync_interval: always`: test_nats_configs.py.
    assert (
        config_map["data"][config_path.name] == (K8S.parent / "nats/nats-cluster.conf").read_text()
    )
    routes = re.findall(r"nats://([\w.-]+):6222", config_map["data"][config_path.name])
    headless = nats["spec"]["serviceName"]
    assert routes == [f"nats-{i}.{headless}" for i in range(3)]
    env = {e["name"]: e for e in env_of(container)}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_nats_gets_every_identitys_public_key_from_the_secret_and_no_seed() -> None:
    container = only_container(objects("StatefulSet")["nats"])
    assert secret_keys_used(container) == {
        f"NATS_{name.upper()}_NKEY": f"nats-{name}-nkey" for name in IDENTITIES
    }


# Boulevard services


def test_every_service_has_a_deployment_and_a_service() -> None:
    # (and the gateway: tests/unit/deploy/test_gateway_deploy.py)
    assert set(objects("Deployment")) == {*SERVICES, "gateway"} - STATEFUL
    assert set(objects("StatefulSet")) == {"nats", *STATEFUL}
    assert set(objects("Service")) == {
        *SERVICES, "gateway", "nats", "nats-headless", "engine-headless"
    }  # fmt: skip


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_runs_its_module_on_its_port(service: Service) -> None:
    container = only_container(deployment(service))
    assert container["image"] == "boulevard"
    assert container["args"] == [f"services.{service.name}"]
    assert container["ports"][0] == {"name": "grpc", "containerPort": service.port}
    assert [p["name"] for p in container["ports"]] == ["grpc", "metrics"]
    env = values(container)
    assert env[service.port_setting] == str(service.port)
    assert env["BOULEVARD_GRPC_HOST"] == "0.0.0.0"
    (port,) = objects("Service")[service.name]["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (service.port, "grpc")
    selector = objects("Service")[service.name]["spec"]["selector"]
    labels = deployment(service)["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_makes_its_streams_with_three_replicas(service: Service) -> None:
    assert values(only_container(deployment(service)))["BOULEVARD_STREAM_REPLICAS"] == "3"


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_connects_to_nats_as_its_own_identity(service: Service) -> None:
    container = only_container(deployment(service))
    assert values(container)["NATS_URL"] == "nats://nats:4222"  # nothing secret in a URL
    used = secret_keys_used(container)
    assert used["BOULEVARD_NATS_NKEY_SEED"] == f"nats-{service.name}-seed"
    assert [k for k in used.values() if k.startswith("nats-")] == [f"nats-{service.name}-seed"]


def test_replicas() -> None:
    replicas = {
        name: d["spec"]["replicas"]
        for kind in ("Deployment", "StatefulSet")
        for name, d in objects(kind).items()
    }
    assert replicas == {
        "engine": 2, "dice": 2, "matchmaking": 1, "ledger": 1, "gateway": 2, "nats": 3
    }  # fmt: skip
    # The ledger is one writer: never two during a rollout either.
    assert objects("Deployment")["ledger"]["spec"]["strategy"]["type"] == "Recreate"


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_is_probed_by_the_healthcheck_module_on_its_port(service: Service) -> None:
    container = only_container(deployment(service))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        alive = ["--alive"] if probe == "livenessProbe" else []  # NATS lost is no restart
        assert container[probe]["exec"]["command"] == [*service.probe, *alive], probe
        assert container[probe]["timeoutSeconds"] >= 2, probe


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_every_variable_set_is_a_setting_of_that_service(service: Service) -> None:
    """A typo would be ignored by the service (its settings ignore unknown names), so the
    only names allowed besides its settings are helpers that another value refers to."""
    container = only_container(deployment(service))
    names = [e["name"] for e in env_of(container)]
    assert len(names) == len(set(names)), "a variable set twice"
    referenced: set[str] = set()
    for i, e in enumerate(env_of(container)):
        for ref in REFERENCE.findall(e.get("value", "")):
            assert ref in names[:i], f"$({ref}) must be defined before {e['name']}"
            referenced.add(ref)
    unknown = set(names) - env_names(service.settings) - referenced
    assert not unknown, f"{service.name}: not settings of {service.settings.__name__}: {unknown}"


# Every container


def test_every_secret_key_used_is_in_the_secret_template_and_every_key_is_used() -> None:
    (secret,) = load_yaml_documents(K8S / "secret.example.yaml")
    assert secret["metadata"]["name"] == SECRET_NAME
    used = {
        key
        for _, spec in pod_specs()
        for container in spec["containers"]
        for key in secret_keys_used(container).values()
    }
    assert used == set(secret["stringData"])


@pytest.mark.parametrize("name_and_spec", pod_specs(), ids=lambda ns: ns[0])
def test_every_container_runs_non_root_read_only_with_health_probes(
    name_and_spec: tuple[str, dict[str, Any]],
) -> None:
    name, spec = name_and_spec
    pod = spec.get("securityContext", {})
    assert spec.get("automountServiceAccountToken") is False
    for container in spec.get("initContainers", []) + spec["containers"]:
        own = container.get("securityContext", {})
        assert own.get("runAsNonRoot", pod.get("runAsNonRoot")) is True, name
        assert own.get("runAsUser", pod.get("runAsUser", 0)) > 0, name
        assert own["readOnlyRootFilesystem"] is True, name
        assert own["allowPrivilegeEscalation"] is False, name
        assert own["capabilities"]["drop"] == ["ALL"], name
        assert "requests" in container["resources"], name
        assert "memory" in container["resources"]["limits"], name
        for probe in ("readinessProbe", "livenessProbe"):
            assert probe in container, f"{name}: no {probe}"
        command = container["readinessProbe"].get("exec", {}).get("command", [])
        if container.get("image") == "boulevard":
            assert command[:3] == HEALTHCHECK, name


def engine_replica_names() -> list[str]:
    """`engine-<i>.<headless Service>:<port>` for each replica of the engine's StatefulSet:
    the names DNS gives its pods."""
    engine = objects("StatefulSet")["engine"]
    headless = objects("Service")[engine["spec"]["serviceName"]]
    (port,) = headless["spec"]["ports"]
    return [
        f"engine-{i}.{headless['metadata']['name']}:{port['port']}"
        for i in range(engine["spec"]["replicas"])
    ]


def test_the_engine_replicas_have_stable_names_through_a_headless_service() -> None:
    engine = objects("StatefulSet")["engine"]
    headless = objects("Service")[engine["spec"]["serviceName"]]
    assert headless["spec"]["clusterIP"] == "None"
    # Not ready (starting, draining): out of DNS, so its games go on to their next replica.
    assert headless["spec"].get("publishNotReadyAddresses", False) is False
    labels = engine["spec"]["template"]["metadata"]["labels"]
    assert headless["spec"]["selector"].items() <= labels.items()
    (port,) = headless["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (SERVICES["engine"].port, "grpc")
    # Peers, not a quorum or a chain: all start at once; no volume, nothing kept per pod.
    assert engine["spec"]["podManagementPolicy"] == "Parallel"
    assert "volumeClaimTemplates" not in engine["spec"]
    assert engine["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    assert engine_replica_names() == [
        "engine-0.engine-headless:50052",
        "engine-1.engine-headless:50052",
    ]


def test_the_gateway_and_the_bots_route_over_every_engine_replica_by_its_name() -> None:
    """The gateway's list and matchmaking's name the StatefulSet's replicas, the same names
    in the same order: a game's owner is chosen from the names, so both send its calls to
    the same replica (and a replica left out of a list would get none of its games)."""
    gateway = values(only_container(objects("Deployment")["gateway"]))
    bots = values(only_container(objects("Deployment")["matchmaking"]))
    names = ",".join(engine_replica_names())
    assert gateway["BOULEVARD_GATEWAY_ENGINE_TARGET"] == names
    assert (
        MatchmakingSettings(engine_target=bots["BOULEVARD_ENGINE_TARGET"]).engine_address() == names
    )
    # No single-engine address beside it to mislead a reader: the list is what is used.
    assert "BOULEVARD_ENGINE_HOST" not in bots


def tls_mount(workload: dict[str, Any], secret: str = "boulevard-tls") -> str:
    """Where the pod mounts a TLS Secret (and that it does so read-only)."""
    spec = workload["spec"]["template"]["spec"]
    (volume,) = [v for v in spec["volumes"] if v.get("secret", {}).get("secretName") == secret]
    assert volume["secret"]["defaultMode"] == 0o440
    keys = {item["key"] for item in volume["secret"]["items"]}
    assert keys == {"ca.pem", "server.pem", "server-key.pem"}  # never the CA's key
    (mount,) = [m for m in only_container(workload)["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["readOnly"] is True
    return str(mount["mountPath"])


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_serves_tls_and_verifies_with_the_ca(service: Service) -> None:
    workload = deployment(service)
    where = tls_mount(workload)
    env = values(only_container(workload))
    assert env["BOULEVARD_TLS_CERT_FILE"] == f"{where}/server.pem"
    assert env["BOULEVARD_TLS_KEY_FILE"] == f"{where}/server-key.pem"
    assert env["BOULEVARD_TLS_CA_FILE"] == f"{where}/ca.pem"
    # The key is mode 0440: readable through the pod's group, not by others.
    pod = workload["spec"]["template"]["spec"]["securityContext"]
    assert pod["fsGroup"] == pod["runAsGroup"]


def test_nats_serves_clients_and_routes_over_tls_with_the_mounted_files() -> None:
    nats = objects("StatefulSet")["nats"]
    where, route_where = tls_mount(nats), tls_mount(nats, "boulevard-nats-route-tls")
    text = (K8S.parent / "nats" / "nats-cluster.conf").read_text()
    client_tls = conf_block(text, "tls")
    cluster = conf_block(text, "cluster")
    assert client_tls is not None and cluster is not None
    route_tls = conf_block(cluster, "tls")
    assert route_tls is not None
    assert conf_setting(client_tls, "cert_file") == f"{where}/server.pem"
    assert conf_setting(client_tls, "key_file") == f"{where}/server-key.pem"
    # Routes: their own certificate, verified with the CA, and it must name a route host
    # (a service's certificate from the same CA is refused: tests/e2e/test_netns_routes.py).
    assert conf_setting(route_tls, "cert_file") == f"{route_where}/server.pem"
    assert conf_setting(route_tls, "key_file") == f"{route_where}/server-key.pem"
    assert conf_setting(route_tls, "ca_file") == f"{route_where}/ca.pem"
    assert conf_setting(route_tls, "verify_cert_and_check_known_urls") == "true"


def test_only_the_nats_pods_mount_the_route_certificate() -> None:
    for kind in ("Deployment", "StatefulSet"):
        for name, workload in objects(kind).items():
            volumes = workload["spec"]["template"]["spec"].get("volumes", [])
            secrets = {v["secret"]["secretName"] for v in volumes if "secret" in v}
            assert ("boulevard-nats-route-tls" in secrets) == (name == "nats"), name


def test_the_engine_signs_for_timed_out_seats_with_matchmakings_bot_key() -> None:
    """Engine and matchmaking read the bot key from one secret key (docs/auditing.md,
    "Clocks": the bot's moves for a timed-out seat are signed with the operator's bot key)."""
    keys = {
        name: secret_keys_used(only_container(deployment(SERVICES[name])))
        for name in ("engine", "matchmaking")
    }
    assert keys["engine"]["BOULEVARD_BOT_SIGNING_KEY"] == "bot-signing-key"
    assert keys["matchmaking"]["BOULEVARD_BOT_SIGNING_KEY"] == "bot-signing-key"
