"""Run the engine service: `python -m services.engine`."""

import asyncio

from boulevard.platform.server import serve
from services.engine.app import EngineApp
from services.engine.settings import get_engine_settings


def main() -> None:
    settings = get_engine_settings()
    asyncio.run(serve(EngineApp(settings), settings))


if __name__ == "__main__":
    main()
