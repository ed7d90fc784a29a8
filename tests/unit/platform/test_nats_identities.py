"""NATS identities: made once per data dir as 0600 seed files, found by settings, rendered
into a config with no anonymous user (the server side is tested on a real nats-server in
tests/integration/security)."""

from __future__ import annotations

from pathlib import Path

import pytest

from boulevard.messaging.identities import (
    IDENTITIES,
    make_identities,
    permissions,
    public_key,
    render_accounts,
    seed_path,
)
from boulevard.platform.settings import NatsIdentityMissing, Settings


def test_identities_are_made_once_as_private_seed_files(tmp_path: Path) -> None:
    folder = tmp_path / "ids"
    keys = make_identities(folder)
    assert set(keys) == set(IDENTITIES)
    assert folder.stat().st_mode & 0o777 == 0o700
    for identity, key in keys.items():
        path = seed_path(folder, identity)
        assert path.stat().st_mode & 0o777 == 0o600
        assert path.read_text().startswith("SU")  # an nkey user seed
        assert key.startswith("U") and key == public_key(path.read_text())
    assert len(set(keys.values())) == len(IDENTITIES)
    assert make_identities(folder) == keys  # kept across restarts


def test_a_service_finds_its_seed_by_its_name(tmp_path: Path) -> None:
    make_identities(tmp_path / "data" / "nats-identities")
    settings = Settings(data_dir=tmp_path / "data")
    assert (
        settings.nats_seed("ledger")
        == seed_path(tmp_path / "data" / "nats-identities", "ledger").read_text().strip()
    )
    elsewhere = Settings(nats_identities_dir=tmp_path / "data" / "nats-identities")
    assert elsewhere.nats_seed("dice") != elsewhere.nats_seed("engine")
    given = Settings(nats_nkey_seed="SUAGIVEN", nats_identities_dir=tmp_path / "none")
    assert given.nats_seed("engine") == "SUAGIVEN"


def test_without_an_identity_a_service_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(NatsIdentityMissing, match="BOULEVARD_NATS_NKEY_SEED"):
        Settings(data_dir=tmp_path).nats_seed("engine")


def test_the_config_has_a_user_per_identity_and_no_anonymous_one(tmp_path: Path) -> None:
    keys = make_identities(tmp_path)
    text = render_accounts(keys)
    for key in keys.values():
        assert text.count(f'nkey: "{key}"') == 1
    for word in ("no_auth_user", "password", "token"):
        assert word not in text
    with pytest.raises(ValueError, match="admin"):
        render_accounts({k: v for k, v in keys.items() if k != "admin"})


def test_an_unknown_identity_has_no_permissions() -> None:
    with pytest.raises(ValueError, match="no NATS identity"):
        permissions("auditor")


def test_each_identity_subscribes_only_to_its_own_inbox() -> None:
    for identity in ("engine", "ledger", "matchmaking"):
        assert permissions(identity).subscribe_allow == [f"_INBOX.{identity}.>"]
    assert permissions("dice").subscribe_allow == ["_INBOX.dice.>", "dice.rpc.>"]
    assert permissions("dice").allow_responses
    assert not any(permissions(i).allow_responses for i in ("engine", "ledger", "matchmaking"))


def test_only_a_buckets_owner_may_make_it() -> None:
    """A bucket is opened as found (its configuration unchecked), so a reader that made it
    first could make another service's bucket capture or source what it likes: only the
    identity that writes a bucket may make its stream (matchmaking reads the engine's
    games index, and does not make it)."""
    for identity in ("engine", "dice", "ledger", "matchmaking"):
        allow = permissions(identity).publish_allow
        prefix = "$JS.API.STREAM.CREATE.KV_"
        made = [s.removeprefix(prefix) for s in allow if s.startswith(prefix)]
        assert made, identity
        for bucket in made:
            assert f"$KV.{bucket}.>" in allow, (identity, bucket)
    mm = permissions("matchmaking").publish_allow
    assert "$JS.API.CONSUMER.MSG.NEXT.KV_engine_games.>" in mm
    assert "$JS.API.STREAM.CREATE.KV_engine_games" not in mm
