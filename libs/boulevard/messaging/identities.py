"""Who may connect to NATS, and what each identity may do there: the one definition.

Every NATS client is an identity: one per service (`engine`, `dice`, `ledger`,
`matchmaking`) and `admin`, kept for operators' tools and test setup. An identity is an
nkey (an Ed25519 key pair): the client keeps the seed in a file of mode 0600, the server
knows only the public key, so a server config holds no secret.

`render_accounts` writes the `accounts` block of a nats-server config from `permissions`;
`boulevard up`, the tests' nats-server and deploy/nats/nats-permissions.conf (rendered by
tools/render_nats_config.py, checked by a test) all use it, so there is one permission model.

The permissions are allow-lists: an identity may publish only its own evidence subjects,
the JetStream API calls its own streams and consumers need, and its own replies; it may
subscribe only to its own inbox (`_INBOX.<identity>.>`, see `inbox_prefix`), so no identity
reads another's replies (the dice answers to the engine among them). Nobody deletes or
purges a stream or a message, and no service updates a stream's configuration (only admin).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nkeys

SERVICE_IDENTITIES = ("matchmaking", "engine", "dice", "ledger")
ADMIN = "admin"
IDENTITIES = (*SERVICE_IDENTITIES, ADMIN)
ACCOUNT = "BOULEVARD"

# Evidence is never deleted, whoever asks (the streams also deny it themselves, but a
# stream can be deleted whole through the API).
NOBODY = (
    "$JS.API.STREAM.DELETE.>",
    "$JS.API.STREAM.PURGE.>",
    "$JS.API.STREAM.MSG.DELETE.>",
)


def inbox_prefix(identity: str) -> str:
    """Where an identity's replies arrive; only it may subscribe there."""
    return f"_INBOX.{identity}"


def seed_path(directory: Path, identity: str) -> Path:
    return Path(directory) / f"{identity}.nk"


def make_identities(directory: Path, identities: Iterable[str] = IDENTITIES) -> dict[str, str]:
    """Make the identities missing in `directory` (seed files, mode 0600; existing ones are
    kept) and return each identity's public key."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    keys = {}
    for identity in identities:
        path = seed_path(directory, identity)
        if not path.exists():
            seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(seed + b"\n")
        keys[identity] = public_key(path.read_bytes())
    return keys


def public_key(seed: bytes | str) -> str:
    """The public key (`U…`) of an nkey user seed (`SU…`)."""
    raw = seed.encode() if isinstance(seed, str) else seed
    pair = nkeys.from_seed(bytearray(raw.strip()))
    key: bytes = pair.public_key
    return key.decode()


@dataclass(frozen=True, slots=True)
class NatsNames:
    """The streams, subjects, buckets and durable consumers the permissions name. The
    defaults are the settings' defaults (a unit test keeps them equal); `from_settings`
    reads whatever a settings object overrides."""

    games_stream: str = "GAMES"
    games_prefix: str = "game"
    dice_stream: str = "DICE"
    dice_prefix: str = "dice"
    dice_rpc_prefix: str = "dice.rpc"
    ledger_stream: str = "LEDGER"
    ledger_prefix: str = "ledger"
    matchmaking_stream: str = "MATCHMAKING"
    matchmaking_prefix: str = "mm"
    engine_snapshots_bucket: str = "engine_snapshots"
    engine_games_bucket: str = "engine_games"
    dice_seeds_bucket: str = "dice_seeds"
    ledger_checkpoint_bucket: str = "ledger_checkpoint"
    tickets_bucket: str = "tickets"
    matches_bucket: str = "matches"
    ratings_bucket: str = "ratings"
    engine_match_consumer: str = "engine-match-formed"
    ledger_consumer: str = "ledger"
    ratings_consumer: str = "matchmaking-ratings"  # on GAMES: the feed of releases before
    finished_consumer: str = "matchmaking-finished"  # on the games index: the ratings feed
    bot_runner_consumer: str = "bot-runner"

    @classmethod
    def from_settings(cls, settings: Any) -> NatsNames:
        fields = {
            "games_stream": "games_stream",
            "games_prefix": "games_subject_prefix",
            "dice_stream": "dice_stream",
            "dice_prefix": "dice_subject_prefix",
            "dice_rpc_prefix": "dice_rpc_prefix",
            "ledger_stream": "ledger_stream",
            "ledger_prefix": "ledger_subject_prefix",
            "matchmaking_stream": "matchmaking_stream",
            "matchmaking_prefix": "matchmaking_subject_prefix",
            "engine_snapshots_bucket": "engine_snapshots_bucket",
            "engine_games_bucket": "engine_games_bucket",
            "dice_seeds_bucket": "dice_seeds_bucket",
            "ledger_checkpoint_bucket": "ledger_checkpoint_bucket",
            "tickets_bucket": "matchmaking_tickets_bucket",
            "matches_bucket": "matchmaking_matches_bucket",
            "ratings_bucket": "matchmaking_ratings_bucket",
            "engine_match_consumer": "engine_match_consumer",
            "ledger_consumer": "ledger_consumer",
            "ratings_consumer": "matchmaking_ratings_consumer",
            "finished_consumer": "matchmaking_finished_consumer",
        }
        found = {
            name: getattr(settings, attr)
            for name, attr in fields.items()
            if hasattr(settings, attr)
        }
        return cls(**found)


@dataclass
class Permissions:
    publish_allow: list[str] = field(default_factory=list)
    publish_deny: list[str] = field(default_factory=list)
    subscribe_allow: list[str] = field(default_factory=list)
    allow_responses: bool = False  # may answer requests it received (once each)

    def add(self, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> None:
        self.publish_allow.extend(s for s in allow if s not in self.publish_allow)
        self.publish_deny.extend(s for s in deny if s not in self.publish_deny)


@dataclass(frozen=True, slots=True)
class StreamUse:
    """What one identity does with one stream."""

    stream: str
    owner: bool = False  # its evidence; it makes it (as a reader may), no service updates it
    writes: tuple[str, ...] = ()  # subjects it publishes into it
    durables: tuple[str, ...] = ()  # its own durable consumers on it
    # Makes unnamed consumers (nats-py's ordered push subscriptions: KV watchers, replays).
    # The unnamed create request names its consumer in the body, so it can also *update*
    # another identity's durable (its filter, say): granted only where needed.
    ephemeral: bool = False
    # Makes the stream when it starts first. Not for a reader of another service's KV
    # bucket: a bucket is opened as found, unchecked (unlike ensure_stream's streams), so
    # the reader could make it with a configuration of its choosing before its owner.
    makes: bool = True


def _uses(names: NatsNames) -> dict[str, list[StreamUse]]:
    """Every stream each service identity uses, found in services/ and libs/ (a missing
    entry shows up as a permissions violation in the e2e tests)."""
    n = names

    def kv(bucket: str) -> StreamUse:
        return StreamUse(f"KV_{bucket}", owner=True, writes=(f"$KV.{bucket}.>",), ephemeral=True)

    return {
        "engine": [
            # WatchGame replays and follows a game with an ordered consumer.
            StreamUse(n.games_stream, owner=True, writes=(f"{n.games_prefix}.>",), ephemeral=True),
            StreamUse(n.matchmaking_stream, durables=(n.engine_match_consumer,)),
            kv(n.engine_snapshots_bucket),
            kv(n.engine_games_bucket),
        ],
        "dice": [
            # `dice.<game_id>` only: `dice.rpc.<op>` has three tokens.
            StreamUse(n.dice_stream, owner=True, writes=(f"{n.dice_prefix}.*",), ephemeral=True),
            kv(n.dice_seeds_bucket),
            # A game's end before its seed is revealed: direct gets or a named consumer.
            StreamUse(n.games_stream),
        ],
        "ledger": [
            StreamUse(
                n.ledger_stream, owner=True, writes=(f"{n.ledger_prefix}.>",), ephemeral=True
            ),
            # Its durable, and ordered replays of one game for reconciliation.
            StreamUse(n.games_stream, durables=(n.ledger_consumer,), ephemeral=True),
            # Its state at a LEDGER sequence, so a start reads only the tail.
            kv(n.ledger_checkpoint_bucket),
        ],
        "matchmaking": [
            StreamUse(
                n.matchmaking_stream,
                owner=True,
                writes=(f"{n.matchmaking_prefix}.>",),
                durables=(n.bot_runner_consumer,),
            ),
            # Direct gets of a game's last event (its GameFinished, its first event); the
            # durable of releases before (its ack floor, read once at upgrade) stays its own.
            StreamUse(n.games_stream, durables=(n.ratings_consumer,)),
            # The ratings feed: the engine's games index, read by a durable of its own.
            StreamUse(f"KV_{n.engine_games_bucket}", durables=(n.finished_consumer,), makes=False),
            kv(n.tickets_bucket),
            kv(n.matches_bucket),
            kv(n.ratings_bucket),
        ],
    }


def _consumer_subjects(stream: str, consumer: str) -> list[str]:
    api = "$JS.API.CONSUMER"
    return [
        f"{api}.CREATE.{stream}.{consumer}",
        f"{api}.CREATE.{stream}.{consumer}.>",
        f"{api}.DURABLE.CREATE.{stream}.{consumer}",
        f"{api}.MSG.NEXT.{stream}.{consumer}",
        f"{api}.DELETE.{stream}.{consumer}",
        f"$JS.ACK.{stream}.{consumer}.>",
    ]


def permissions(identity: str, names: NatsNames | None = None) -> Permissions:
    """The permissions of one identity (see docs/security.md for the table)."""
    n = names or NatsNames()
    perms = Permissions(publish_deny=list(NOBODY))
    if identity == ADMIN:
        # Operators' tools and test setup: everything but destroying evidence.
        perms.publish_allow = [">"]
        perms.subscribe_allow = [">"]
        return perms
    uses = _uses(n)
    if identity not in uses:
        raise ValueError(f"no NATS identity named {identity!r}")
    durables_of_others = {
        (use.stream, durable)
        for other, other_uses in uses.items()
        if other != identity
        for use in other_uses
        for durable in use.durables
    }
    perms.subscribe_allow.append(f"{inbox_prefix(identity)}.>")
    perms.add(["$JS.API.INFO", "$JS.API.STREAM.NAMES"])
    for use in uses[identity]:
        s = use.stream
        # Reading: stream info, single messages, and consumers of its own (ephemeral ones,
        # named by a random id, or its own durables), with their acks and flow control.
        perms.add(
            [
                f"$JS.API.STREAM.INFO.{s}",
                f"$JS.API.STREAM.MSG.GET.{s}",
                f"$JS.API.DIRECT.GET.{s}",
                f"$JS.API.DIRECT.GET.{s}.>",
                f"$JS.API.CONSUMER.CREATE.{s}.>",
                f"$JS.API.CONSUMER.DURABLE.CREATE.{s}.>",
                f"$JS.API.CONSUMER.INFO.{s}.>",
                f"$JS.API.CONSUMER.MSG.NEXT.{s}.>",
                f"$JS.API.CONSUMER.DELETE.{s}.>",
                f"$JS.ACK.{s}.>",
                f"$JS.FC.{s}.>",
            ]
        )
        if use.makes:
            # Whoever starts first makes the stream (ensure_stream checks it is made as
            # Boulevard makes it). Nobody but admin updates a stream: its subjects,
            # republish and sources reach past these permissions (capture another's
            # inbox, write into game.>, read another's bucket), so owning one must not
            # mean configuring it.
            perms.add([f"$JS.API.STREAM.CREATE.{s}"])
        if use.ephemeral:
            perms.add([f"$JS.API.CONSUMER.CREATE.{s}"])
        perms.add(use.writes)
        # Another service's durable consumer is not ours to pull, ack, move or delete.
        for stream, durable in sorted(durables_of_others):
            if stream == s:
                perms.add(deny=_consumer_subjects(stream, durable))
    if identity == "engine":
        perms.add([f"{n.dice_rpc_prefix}.>"])  # only the engine asks for dice
    if identity == "dice":
        perms.subscribe_allow.append(f"{n.dice_rpc_prefix}.>")  # only dice answers
        perms.allow_responses = True
    return perms


def _strings(values: Iterable[str], indent: str) -> str:
    items = [f'{indent}  "{v}"' for v in values]
    return "[\n" + ",\n".join(items) + f"\n{indent}]"


def render_user(identity: str, key: str, names: NatsNames | None = None) -> str:
    """One user of the accounts block. `key` is the public key, or a `$VARIABLE` that the
    server reads from its environment (deploy/)."""
    perms = permissions(identity, names)
    nkey = key if key.startswith("$") else f'"{key}"'
    lines = [
        "      {",
        f"        # {identity}",
        f"        nkey: {nkey}",
        "        permissions: {",
        "          publish: {",
        f"            allow: {_strings(perms.publish_allow, '            ')}",
        f"            deny: {_strings(perms.publish_deny, '            ')}",
        "          }",
        f"          subscribe: {{ allow: {_strings(perms.subscribe_allow, '          ')} }}",
    ]
    if perms.allow_responses:
        lines.append("          allow_responses: true")
    lines += ["        }", "      }"]
    return "\n".join(lines)


def render_accounts(keys: Mapping[str, str], names: NatsNames | None = None) -> str:
    """The `accounts` block: one account holding every stream, one nkey user per identity,
    and no anonymous user (a client without a key is refused)."""
    missing = set(IDENTITIES) - set(keys)
    if missing:
        raise ValueError(f"no key for {', '.join(sorted(missing))}")
    users = "\n".join(render_user(identity, keys[identity], names) for identity in IDENTITIES)
    return (
        "accounts {\n"
        f"  {ACCOUNT} {{\n"
        "    jetstream: enabled\n"
        "    users: [\n"
        f"{users}\n"
        "    ]\n"
        "  }\n"
        "}\n"
    )


def key_variable(identity: str) -> str:
    """The environment variable a deployed nats-server reads an identity's public key from."""
    return f"NATS_{identity.upper()}_NKEY"


def seed_variable(identity: str) -> str:
    """The deploy secret (deploy/secrets.env) holding a service identity's seed."""
    return f"NATS_{identity.upper()}_SEED"


DEPLOY_HEADER = """\
# Who may connect, and what each Boulevard identity may do (docs/security.md).
# Included by nats.conf (compose) and nats-cluster.conf (Kubernetes).
#
# GENERATED by tools/render_nats_config.py from boulevard.messaging.identities, the same
# code that configures `boulevard up` and the tests' nats-server; a test fails when this
# file or its copy in deploy/k8s/nats.yaml drifts. Do not edit by hand.
#
# One account, BOULEVARD, holds every stream. Inside it, one nkey user per identity: the
# server reads only public keys ($NATS_<IDENTITY>_NKEY, from deploy/secrets.env or the
# boulevard-secrets Secret; `boulevard nats-identities` makes them), each service holds its
# own seed. No anonymous user: a client without a known key is refused. The permissions are
# allow-lists: only the engine writes game.> and its buckets and asks dice.rpc.>; only dice
# answers dice.rpc.> and writes dice.<game> and its bucket; only the ledger writes ledger.>
# and its checkpoint bucket; only matchmaking writes mm.> and its buckets; nobody deletes
# or purges a stream or a message, and only admin updates one. The subjects and
# bucket names are the defaults of the BOULEVARD_* settings.

"""


def render_deploy_permissions(names: NatsNames | None = None) -> str:
    """deploy/nats/nats-permissions.conf: the accounts block with the keys as variables."""
    keys = {identity: f"${key_variable(identity)}" for identity in IDENTITIES}
    return DEPLOY_HEADER + render_accounts(keys, names)
