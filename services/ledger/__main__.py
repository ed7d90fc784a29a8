"""Run the ledger service: `python -m services.ledger`."""

import asyncio

from boulevard.platform.gctune import tune_gc
from boulevard.platform.server import serve
from services.ledger.app import LedgerApp
from services.ledger.settings import get_ledger_settings


def main() -> None:
    settings = get_ledger_settings()
    tune_gc()
    asyncio.run(serve(LedgerApp(settings), settings))


if __name__ == "__main__":
    main()
