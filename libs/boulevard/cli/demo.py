"""The demo game `boulevard up` plays once the platform is healthy."""

from __future__ import annotations


def play_demo(addresses: dict[str, str]) -> None:
    # The engine's game RPCs arrive with the engine issue; until then the demo says so.
    print("demo: the engine does not host games yet; nothing to play", flush=True)
