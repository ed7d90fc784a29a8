"""`python -m boulevard.cli.healthcheck HOST:PORT [SERVICE]`: argument handling, no network."""

from __future__ import annotations

import pytest

from boulevard.cli import healthcheck
from boulevard.cli.healthcheck import Target, parse_target


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("127.0.0.1:50052", Target("127.0.0.1", 50052)),
        ("engine:50052", Target("engine", 50052)),
        ("[::1]:50053", Target("::1", 50053)),
        ("localhost:1", Target("localhost", 1)),
        ("h:65535", Target("h", 65535)),
    ],
)
def test_host_and_port_are_read(text: str, target: Target) -> None:
    assert parse_target(text) == target


def test_an_ipv6_address_is_written_back_in_brackets() -> None:
    assert Target("::1", 50053).address == "[::1]:50053"
    assert Target("127.0.0.1", 50052).address == "127.0.0.1:50052"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("127.0.0.1", "HOST:PORT"),
        (":50052", "HOST:PORT"),
        ("[]:50052", "HOST:PORT"),
        ("::1:50052", "brackets"),
        ("host:", "1 to 65535"),
        ("host:0", "1 to 65535"),
        ("host:65536", "1 to 65535"),
        ("host:http", "1 to 65535"),
        ("host:-1", "1 to 65535"),
    ],
)
def test_a_bad_target_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_target(text)


@pytest.mark.parametrize(
    "argv",
    [[], ["127.0.0.1"], ["host:0"], ["a:1", "svc", "extra"], ["a:1", "--timeout", "0"]],
)
def test_bad_arguments_exit_2_with_a_message(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert healthcheck.main(argv) == healthcheck.USAGE == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "error:" in err


def test_the_service_defaults_to_the_whole_server(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Target, str, float]] = []

    def fake_check(
        target: Target, service: str = "", timeout: float = 3.0, *, alive: bool = False
    ) -> tuple[int, str]:
        calls.append((target, service, timeout, alive))
        return healthcheck.SERVING, "healthy"

    monkeypatch.setattr(healthcheck, "check", fake_check)
    assert healthcheck.main(["127.0.0.1:50052"]) == 0
    assert healthcheck.main(["e:1", "boulevard.v1.EngineService", "--timeout", "0.5"]) == 0
    assert healthcheck.main(["e:1", "--alive"]) == 0
    assert calls == [
        (Target("127.0.0.1", 50052), "", 3.0, False),
        (Target("e", 1), "boulevard.v1.EngineService", 0.5, False),
        (Target("e", 1), "", 3.0, True),
    ]


def test_an_unhealthy_answer_is_exit_1_and_said_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        healthcheck, "check", lambda *_a, **_k: (healthcheck.NOT_SERVING, "unhealthy: x")
    )
    # Port 1, where nothing listens: unhealthy even if a change reached the network past the
    # fake (an engine of `make run` may hold 50052 on this machine).
    assert healthcheck.main(["127.0.0.1:1"]) == 1
    assert capsys.readouterr().err.strip() == "unhealthy: x"
