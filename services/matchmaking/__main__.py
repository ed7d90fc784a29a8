"""Run the matchmaking service: `python -m services.matchmaking`."""

import asyncio

from boulevard.platform.server import serve
from boulevard.platform.settings import get_settings
from services.matchmaking.app import MatchmakingApp


def main() -> None:
    settings = get_settings()
    asyncio.run(serve(MatchmakingApp(settings), settings))


if __name__ == "__main__":
    main()
