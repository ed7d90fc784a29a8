"""The nats-server configs we ship: JetStream always fsyncs before it acknowledges (DESIGN.md,
"Durability"), the Kubernetes ConfigMap carries the same files, and the permissions file is
the generated one: an nkey user per identity, no password, no anonymous user."""

from __future__ import annotations

import re
from dataclasses import asdict

import pytest

from boulevard.messaging.identities import (
    IDENTITIES,
    NatsNames,
    permissions,
    render_deploy_permissions,
)
from tests.unit.deploy.support import (
    NATS_CONFIGS,
    SERVICES,
    conf_block,
    conf_setting,
    manifests,
)


def shipped_configs() -> list[tuple[str, str]]:
    """(where, text) of every nats-server config file in deploy/ and in the ConfigMaps."""
    found = [
        (str(p.relative_to(NATS_CONFIGS.parent)), p.read_text())
        for p in NATS_CONFIGS.glob("*.conf")
    ]
    for path, doc in manifests():
        if doc["kind"] == "ConfigMap":
            for key, text in doc["data"].items():
                if key.endswith(".conf"):
                    found.append((f"{path.name}:{doc['metadata']['name']}/{key}", text))
    return found


def test_the_server_configs_are_shipped() -> None:
    names = {p.name for p in NATS_CONFIGS.glob("*.conf")}
    assert {"nats.conf", "nats-cluster.conf", "nats-permissions.conf"} <= names
    assert len(shipped_configs()) >= 5  # and the ConfigMap's two copies


@pytest.mark.parametrize(
    ("where", "text"), [pytest.param(w, t, id=w) for w, t in shipped_configs()]
)
def test_every_jetstream_config_syncs_always(where: str, text: str) -> None:
    jetstream = conf_block(text, "jetstream")
    if jetstream is None:
        assert "include" not in text and "store_dir" not in text, (
            f"{where}: a server config without JetStream"
        )
        return
    assert conf_setting(jetstream, "sync_interval") == "always", where
    assert conf_setting(jetstream, "store_dir") is not None, where


@pytest.mark.parametrize("name", ["nats.conf", "nats-cluster.conf"])
def test_server_configs_have_jetstream_and_the_users(name: str) -> None:
    text = (NATS_CONFIGS / name).read_text()
    assert conf_block(text, "jetstream") is not None
    assert re.search(r"(?m)^include nats-permissions\.conf$", text)


def test_the_cluster_config_is_a_cluster() -> None:
    text = (NATS_CONFIGS / "nats-cluster.conf").read_text()
    cluster = conf_block(text, "cluster")
    assert cluster is not None
    assert len(re.findall(r"nats://[\w.-]+:6222", cluster)) == 3
    assert conf_setting(text, "server_name") == "$POD_NAME"


def test_each_identity_is_an_nkey_user_in_one_account_and_nobody_has_a_password() -> None:
    text = (NATS_CONFIGS / "nats-permissions.conf").read_text()
    users = re.findall(r"(?m)^\s*nkey:\s*(\S+)", text)
    assert sorted(users) == sorted(f"$NATS_{name.upper()}_NKEY" for name in IDENTITIES)
    assert set(SERVICES) | {"admin"} == set(IDENTITIES)
    assert text.count("jetstream: enabled") == 1
    assert not re.search(r"(?im)^\s*(password|user|no_auth_user|token)\s*[:=]", text)


def test_the_shipped_permissions_are_the_ones_boulevard_up_and_the_tests_run() -> None:
    """One permission model: deploy/ is rendered by the code that configures the embedded
    server (`make nats-config` after a change)."""
    assert (NATS_CONFIGS / "nats-permissions.conf").read_text() == render_deploy_permissions()
    copies = [
        doc["data"]["nats-permissions.conf"]
        for _, doc in manifests()
        if doc["kind"] == "ConfigMap" and "nats-permissions.conf" in doc["data"]
    ]
    assert copies == [render_deploy_permissions()]


def test_the_permission_names_are_the_settings_defaults() -> None:
    """The permissions name streams, buckets and consumers by the settings' defaults."""
    for settings in (service.settings() for service in SERVICES.values()):
        for field, value in asdict(NatsNames.from_settings(settings)).items():
            assert value == getattr(NatsNames(), field), (type(settings).__name__, field)


def test_only_the_owner_writes_each_evidence_subject() -> None:
    owner = {"game.>": "engine", "dice.*": "dice", "ledger.>": "ledger", "mm.>": "matchmaking"}
    for subject, writer in owner.items():
        for identity in SERVICES:
            allowed = subject in permissions(identity).publish_allow
            assert allowed == (identity == writer), (subject, identity)
    for identity in IDENTITIES:
        perms = permissions(identity)
        assert "$JS.API.STREAM.DELETE.>" in perms.publish_deny, identity
        assert "$JS.API.STREAM.PURGE.>" in perms.publish_deny, identity
        assert "$JS.API.STREAM.MSG.DELETE.>" in perms.publish_deny, identity
    # Only the engine asks for dice, only dice answers.
    asks = {i for i in SERVICES if "dice.rpc.>" in permissions(i).publish_allow}
    answers = {i for i in SERVICES if "dice.rpc.>" in permissions(i).subscribe_allow}
    assert (asks, answers) == ({"engine"}, {"dice"})
