"""`boulevard tls-certs DIR --host NAME …`: a CA and a server certificate for a deployment.

Writes DIR/ca.pem, DIR/ca-key.pem, DIR/server.pem and DIR/server-key.pem (keys mode 0600)
with the code `boulevard up --tls` uses; the certificate names every --host (the compose
service names or the Kubernetes services; for the NATS routes' own certificate,
`*.nats-headless` in a second folder holding the same CA's files) and
the loopback names the health probes use. Running it again keeps what is still valid.
Where an organisation has its own CA (cert-manager, …), use that instead: the services need
only a certificate, its key and the CA (docs/security.md).
"""

from __future__ import annotations

import argparse

from boulevard.platform.tls import LOCAL_HOSTS, make_pki

COMPOSE_HOSTS = ("nats", "matchmaking", "engine", "dice", "ledger")


def run(args: argparse.Namespace) -> int:
    hosts = args.host or list(COMPOSE_HOSTS)
    pki = make_pki(args.dir, hosts, days=args.days)
    print(f"CA {pki.ca_cert} (its key {pki.ca_key}: keep it offline once done)")
    print(f"server certificate {pki.cert} for {', '.join([*hosts, *LOCAL_HOSTS])}")
    print(f"server key {pki.key}")
    return 0
