"""docker-compose.yml, read as a file (no Docker here): the four services from one image on
the ports of DESIGN.md, healthy NATS first, non-root read-only containers with gRPC health
probes, secrets from deploy/secrets.env, and only real setting names in the environment."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest

from boulevard.messaging.identities import IDENTITIES
from tests.unit.deploy.support import (
    DEPLOY,
    DESIGN_PORTS,
    ROOT,
    SERVICES,
    Service,
    compose,
    conf_block,
    conf_setting,
    env_names,
)

INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[?-][^}]*)?\}")
# The secrets each service needs to start (the others must not be handed to it).
SECRETS = {
    "matchmaking": {"BOULEVARD_TOKEN_KEY", "BOULEVARD_AUTH_JWKS", "BOULEVARD_AUTH_ISSUER"},
    "engine": {"BOULEVARD_TOKEN_KEY", "BOULEVARD_AUTH_JWKS", "BOULEVARD_AUTH_ISSUER"},
    "dice": {"BOULEVARD_DICE_SEED_KEY"},
    "ledger": {"BOULEVARD_LEDGER_SIGNING_KEY"},
}
ALL_SECRETS = set().union(*SECRETS.values())


def interpolate(text: str) -> str:
    """What compose makes of `${VAR:?…}`, with every variable set to its name in hex."""
    return INTERPOLATION.sub(lambda m: m.group(1).encode().hex(), text)


def service_config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = compose()["services"][name]
    return config


def environment(name: str) -> dict[str, str]:
    env = service_config(name).get("environment", {})
    assert isinstance(env, dict), f"{name}: write environment as a mapping"
    return {str(k): str(v) for k, v in env.items()}


def test_design_ports_are_the_settings_defaults() -> None:
    assert {s.name: s.port for s in SERVICES.values()} == DESIGN_PORTS


def test_compose_runs_nats_and_the_four_services() -> None:
    # (the prometheus that scrapes them: tests/unit/deploy/test_validators.py; the gateway:
    # tests/unit/deploy/test_gateway_deploy.py)
    assert set(compose()["services"]) == {"nats", "prometheus", "gateway", *SERVICES}


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_runs_its_module_on_its_port(service: Service) -> None:
    config = service_config(service.name)
    env = environment(service.name)
    assert config["image"] == "boulevard:dev"
    assert config["build"] == {"context": ".", "dockerfile": "deploy/Dockerfile"}
    assert config["command"] == [f"services.{service.name}"]
    assert env[service.port_setting] == str(service.port)
    assert env["BOULEVARD_GRPC_HOST"] == "0.0.0.0"
    assert f"127.0.0.1:{service.port}:{service.port}" in config["ports"]


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_is_non_root_read_only_and_probed_on_its_port(service: Service) -> None:
    config = service_config(service.name)
    user = str(config["user"]).split(":")[0]
    assert user not in ("", "0", "root")
    assert config["read_only"] is True
    assert any(str(t).startswith("/tmp") for t in config["tmpfs"])
    assert config["cap_drop"] == ["ALL"]
    assert config["healthcheck"]["test"] == ["CMD", *service.probe]


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_waits_for_healthy_nats_and_connects_as_its_own_identity(
    service: Service,
) -> None:
    assert service_config(service.name)["depends_on"] == {"nats": {"condition": "service_healthy"}}
    env = environment(service.name)
    url = urlsplit(env["NATS_URL"])
    assert (url.scheme, url.hostname, url.port) == ("nats", "nats", 4222)
    assert url.username is None and url.password is None  # nothing secret in a URL
    seed = f"NATS_{service.name.upper()}_SEED"
    assert env["BOULEVARD_NATS_NKEY_SEED"] == f"${{{seed}:?set it in deploy/secrets.env}}"
    # Its own seed and no other identity's.
    seeds = {v for value in env.values() for v in INTERPOLATION.findall(value)}
    assert {v for v in seeds if v.endswith("_SEED")} == {seed}


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_every_variable_set_is_a_setting_of_that_service(service: Service) -> None:
    unknown = set(environment(service.name)) - env_names(service.settings)
    assert not unknown, f"{service.name}: not settings of {service.settings.__name__}: {unknown}"


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_gets_its_secrets_from_the_env_file_and_no_others(service: Service) -> None:
    env = environment(service.name)
    assert set(env) & ALL_SECRETS == SECRETS[service.name]
    for name in SECRETS[service.name]:
        # Interpolated, and required: compose stops when the env file lacks it.
        assert env[name] == f"${{{name}:?set it in deploy/secrets.env}}"


def test_secrets_example_documents_exactly_what_compose_interpolates() -> None:
    used = set(INTERPOLATION.findall((ROOT / "docker-compose.yml").read_text()))
    example = (DEPLOY / "secrets.env.example").read_text()
    documented = {
        line.split("=", 1)[0].strip()
        for line in example.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }
    assert used == documented
    assert documented >= ALL_SECRETS
    # Shipped empty: nobody runs with a published example secret.
    settings_lines = [line for line in example.splitlines() if line and not line.startswith("#")]
    assert all(line.endswith("=") for line in settings_lines)


def test_nats_is_the_official_image_with_jetstream_synced_always_on_a_volume() -> None:
    nats = service_config("nats")
    assert nats["image"].startswith("nats:2.12")
    command = nats["command"]
    config_path = command[command.index("--config") + 1]
    mounts = dict(volume.split(":")[:2] for volume in nats["volumes"])
    host_dir = next(h for h, c in mounts.items() if config_path.startswith(c + "/"))
    shipped = (ROOT / host_dir / config_path.rsplit("/", 1)[1]).resolve()
    assert shipped == (DEPLOY / "nats" / "nats.conf").resolve()
    jetstream = conf_block(shipped.read_text(), "jetstream")
    assert jetstream is not None
    assert conf_setting(jetstream, "sync_interval") == "always"
    store = conf_setting(jetstream, "store_dir")
    assert store is not None and mounts.get("nats-store") == "/data"
    assert store.startswith("/data/")
    assert "nats-store" in compose()["volumes"]
    assert nats["healthcheck"]["test"][0] == "CMD"
    assert nats["read_only"] is True


def test_nats_gets_every_identitys_public_key_and_no_seed() -> None:
    env = environment("nats")
    assert set(env) == {f"NATS_{name.upper()}_NKEY" for name in IDENTITIES}
    for name, value in env.items():
        assert value == f"${{{name}:?set it in deploy/secrets.env}}"


def test_matchmaking_bots_reach_the_engine_by_its_service_name() -> None:
    env = environment("matchmaking")
    assert env["BOULEVARD_ENGINE_HOST"] == "engine"
    assert env["BOULEVARD_ENGINE_PORT"] == str(SERVICES["engine"].port)


TLS_FILES = {
    "BOULEVARD_TLS_CERT_FILE": "/run/secrets/tls-cert",
    "BOULEVARD_TLS_KEY_FILE": "/run/secrets/tls-key",
    "BOULEVARD_TLS_CA_FILE": "/run/secrets/tls-ca",
}


@pytest.mark.parametrize("service", SERVICES.values(), ids=lambda s: s.name)
def test_each_service_serves_tls_and_verifies_with_the_ca(service: Service) -> None:
    assert sorted(service_config(service.name)["secrets"]) == ["tls-ca", "tls-cert", "tls-key"]
    env = environment(service.name)
    assert {k: env[k] for k in TLS_FILES} == TLS_FILES


def test_tls_files_come_from_deploy_tls_and_the_ca_key_stays_out() -> None:
    secrets = compose()["secrets"]
    assert {name: s["file"] for name, s in secrets.items()} == {
        "tls-ca": "./deploy/tls/ca.pem",
        "tls-cert": "./deploy/tls/server.pem",
        "tls-key": "./deploy/tls/server-key.pem",
    }
    assert "tls/" in (DEPLOY / ".gitignore").read_text().splitlines()


def test_nats_speaks_tls_only_with_the_compose_certificate() -> None:
    assert sorted(service_config("nats")["secrets"]) == ["tls-cert", "tls-key"]
    tls = conf_block((DEPLOY / "nats" / "nats.conf").read_text(), "tls")
    assert tls is not None
    assert conf_setting(tls, "cert_file") == "/run/secrets/tls-cert"
    assert conf_setting(tls, "key_file") == "/run/secrets/tls-key"


def test_the_engine_signs_for_timed_out_seats_with_matchmakings_bot_key() -> None:
    """The platform's bot plays a seat whose time ran out (engine) and fills bot seats
    (matchmaking) under one bot key: both must read the same secret, or the engine would make
    its own key on its volume and its moves would not be the bot's."""
    required = "${BOULEVARD_BOT_SIGNING_KEY:?set it in deploy/secrets.env}"
    assert environment("engine")["BOULEVARD_BOT_SIGNING_KEY"] == required
    assert environment("matchmaking")["BOULEVARD_BOT_SIGNING_KEY"] == required
