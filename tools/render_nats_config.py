"""Render deploy/nats/nats-permissions.conf (and its copy in the ConfigMap of
deploy/k8s/nats.yaml) from boulevard.messaging.identities, the permission model that
`boulevard up` and the tests run. `--check` fails when the shipped files drift."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from boulevard.messaging.identities import render_deploy_permissions

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "deploy" / "nats" / "nats-permissions.conf"
MANIFEST = ROOT / "deploy" / "k8s" / "nats.yaml"
KEY = "  nats-permissions.conf: |\n"


def with_config_map_copy(manifest: str, conf: str) -> str:
    """The manifest with the ConfigMap's nats-permissions.conf replaced by `conf`."""
    start = manifest.index(KEY) + len(KEY)
    end = manifest.index("\n---", start)
    body = "".join(f"    {line}" if line.strip() else "\n" for line in conf.splitlines(True))
    return manifest[:start] + body.rstrip("\n") + "\n" + manifest[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the files drifted")
    args = parser.parse_args(argv)
    conf = render_deploy_permissions()
    manifest = with_config_map_copy(MANIFEST.read_text(), conf)
    if args.check:
        stale = [p for p, text in ((CONF, conf), (MANIFEST, manifest)) if p.read_text() != text]
        for path in stale:
            print(f"{path.relative_to(ROOT)} drifted: run `make nats-config`", file=sys.stderr)
        return 1 if stale else 0
    CONF.write_text(conf)
    MANIFEST.write_text(manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
