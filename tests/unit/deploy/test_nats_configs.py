"""The nats-server configs we ship: JetStream always fsyncs before it acknowledges (DESIGN.md,
"Durability"), the Kubernetes ConfigMap carries the same files, and the users in the
permissions file are the four services, each with its own password variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


def test_each_service_is_a_user_with_its_own_password_in_one_account() -> None:
    text = (NATS_CONFIGS / "nats-permissions.conf").read_text()
    users = re.findall(r"(?m)^\s*user:\s*(\S+)\s*\n\s*password:\s*(\S+)", text)
    assert sorted(users) == sorted((name, f"$NATS_{name.upper()}_PASSWORD") for name in SERVICES)
    assert text.count("jetstream: enabled") == 1


def test_only_the_owner_writes_each_evidence_subject() -> None:
    text = Path(NATS_CONFIGS / "nats-permissions.conf").read_text()
    owner = {"game.>": "engine", "dice.*": "dice", "ledger.>": "ledger", "mm.>": "matchmaking"}
    blocks = re.split(r"(?m)^\s*user:\s*", text)[1:]
    by_user = {block.split()[0]: block for block in blocks}
    for subject, writer in owner.items():
        for user, block in by_user.items():
            denied = f'"{subject}"' in block.split("subscribe:")[0]
            assert denied == (user != writer), (subject, user)
    for user, block in by_user.items():
        assert '"$JS.API.STREAM.DELETE.>"' in block, user
