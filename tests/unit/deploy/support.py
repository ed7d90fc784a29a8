"""What the deployment files must agree with, read from the code: the services, their ports
and proto names, and the settings each one reads."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import AliasChoices
from pydantic_settings import BaseSettings

from boulevard.platform.settings import Settings
from services.dice.app import DiceApp
from services.dice.settings import DiceSettings
from services.engine.app import EngineApp
from services.engine.settings import EngineSettings
from services.ledger.app import LedgerApp
from services.ledger.settings import LedgerSettings
from services.matchmaking.app import MatchmakingApp
from services.matchmaking.settings import MatchmakingSettings

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
NATS_CONFIGS = DEPLOY / "nats"
HEALTHCHECK = ["python", "-m", "boulevard.cli.healthcheck"]


@dataclass(frozen=True)
class Service:
    name: str
    port: int
    proto_service: str  # what its health servicer answers for, besides ""
    settings: type[Settings]

    @property
    def probe(self) -> list[str]:
        return [*HEALTHCHECK, f"127.0.0.1:{self.port}", self.proto_service]

    @property
    def port_setting(self) -> str:
        return f"BOULEVARD_{self.name.upper()}_PORT"


def _services() -> dict[str, Service]:
    defaults = Settings()
    apps: dict[str, tuple[Any, type[Settings]]] = {
        "matchmaking": (MatchmakingApp, MatchmakingSettings),
        "engine": (EngineApp, EngineSettings),
        "dice": (DiceApp, DiceSettings),
        "ledger": (LedgerApp, LedgerSettings),
    }
    return {
        name: Service(name, defaults.port_of(name), app.service_names[0], settings)
        for name, (app, settings) in apps.items()
    }


# DESIGN.md "Names and ports": the ports are the settings' defaults.
SERVICES = _services()
DESIGN_PORTS = {"matchmaking": 50051, "engine": 50052, "dice": 50053, "ledger": 50054}


def env_names(settings: type[BaseSettings]) -> set[str]:
    """Every environment variable a settings class reads."""
    prefix = str(settings.model_config.get("env_prefix", ""))
    names: set[str] = set()
    for field_name, field in settings.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(str(choice) for choice in alias.choices)
        elif isinstance(alias, str):
            names.add(alias)
        else:
            names.add((prefix + field_name).upper())
    return names


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def manifests() -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(K8S.glob("*.yaml")):
        for doc in load_yaml_documents(path):
            yield path, doc


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def conf_block(text: str, name: str) -> str | None:
    """The body of a top-level `name { … }` block of a nats-server config, comments removed."""
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    match = re.search(rf"(?m)^\s*{name}\s*[:=]?\s*\{{", body)
    if match is None:
        return None
    depth, start = 1, match.end()
    for i in range(start, len(body)):
        depth += {"{": 1, "}": -1}.get(body[i], 0)
        if depth == 0:
            return body[start:i]
    raise ValueError(f"unbalanced braces after {name}")


def conf_setting(block: str, key: str) -> str | None:
    match = re.search(rf"(?m)^\s*{key}\s*[:=]\s*(\S+)", block)
    return match.group(1).strip("\"'") if match else None
