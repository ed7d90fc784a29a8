"""`free_port` hands out ports a server can still bind a moment later: below the kernel's
ephemeral range (so no outgoing connection takes one meanwhile), each once per process,
each free when handed out. A service of `boulevard up` once failed to start in CI with
"Address already in use" on a port `bind(0)` had given from inside that range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from boulevard.messaging.server import FREE_PORT_FLOOR, _ephemeral_low, free_port

pytestmark = pytest.mark.integration


def test_ports_come_from_below_the_ephemeral_range_once_each_and_bind() -> None:
    low = _ephemeral_low()
    if low - FREE_PORT_FLOOR < 1000:
        pytest.skip(f"this kernel's ephemeral range starts at {low}: no room below it")
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(FREE_PORT_FLOOR <= p < low for p in ports), ports
    for port in ports[:20]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free when handed out: a server binds it


def test_a_port_someone_listens_on_is_never_handed_out() -> None:
    """600 ports below the range held by listeners this process did not get from free_port
    (few enough for a 1,024-file limit; without the check, 200 ports handed out would miss
    all of them about once in 15,000 runs): the 200 avoid every one."""
    low = _ephemeral_low()
    if low - FREE_PORT_FLOOR < 1000:
        pytest.skip(f"this kernel's ephemeral range starts at {low}: no room below it")
    held: list[socket.socket] = []
    try:
        for port in range(FREE_PORT_FLOOR, FREE_PORT_FLOOR + 600):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            s.listen()
            held.append(s)
        taken = {s.getsockname()[1] for s in held}
        assert not taken & {free_port() for _ in range(200)}
    finally:
        for s in held:
            s.close()


def test_the_ephemeral_range_is_read_from_the_kernel(tmp_path: Path) -> None:
    sysctl = tmp_path / "ip_local_port_range"
    sysctl.write_text("40000\t60999\n")
    assert _ephemeral_low(str(sysctl)) == 40000
    assert _ephemeral_low(str(tmp_path / "absent")) == 32768
