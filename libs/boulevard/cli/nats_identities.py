"""`boulevard nats-identities DIR`: make the NATS identities of a deployment.

Writes one nkey seed per identity into DIR (`<identity>.nk`, mode 0600; existing ones are
kept, so running it again changes nothing) and `DIR/secrets.env` (mode 0600): the public
keys the nats-server reads (NATS_<IDENTITY>_NKEY) and the seeds the services connect with
(NATS_<SERVICE>_SEED), to copy into deploy/secrets.env or the boulevard-secrets Secret. The
admin seed stays in DIR, for operators' tools only. Nothing secret is printed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from boulevard.messaging.identities import (
    IDENTITIES,
    SERVICE_IDENTITIES,
    key_variable,
    make_identities,
    seed_path,
    seed_variable,
)


def secrets_lines(directory: Path) -> list[str]:
    keys = make_identities(directory)
    lines = [f"{key_variable(i)}={keys[i]}" for i in IDENTITIES]
    for service in SERVICE_IDENTITIES:
        seed = seed_path(directory, service).read_text().strip()
        lines.append(f"{seed_variable(service)}={seed}")
    return lines


def run(args: argparse.Namespace) -> int:
    directory: Path = args.dir
    lines = secrets_lines(directory)
    out = directory / "secrets.env"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.writelines(f"{line}\n" for line in lines)
    print(f"NATS identities in {directory} ({', '.join(IDENTITIES)}; seeds mode 0600)")
    print(f"public keys and service seeds for deploy/secrets.env or the Secret: {out}")
    return 0
