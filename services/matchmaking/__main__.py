"""Run the matchmaking service: `python -m services.matchmaking`."""

import sys

from boulevard.platform import eventloop
from boulevard.platform.gctune import tune_gc
from boulevard.platform.server import serve
from services.matchmaking.app import MatchmakingApp, MissingTokenKey
from services.matchmaking.settings import get_matchmaking_settings


def main() -> None:
    settings = get_matchmaking_settings()
    try:
        app = MatchmakingApp(settings)
    except MissingTokenKey as exc:
        sys.exit(f"matchmaking: {exc}")
    tune_gc()
    eventloop.run(serve(app, settings))


if __name__ == "__main__":
    main()
