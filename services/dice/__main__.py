"""Run the dice service: `python -m services.dice`."""

from boulevard.platform import eventloop
from boulevard.platform.gctune import tune_gc
from boulevard.platform.server import serve
from services.dice.app import DiceApp
from services.dice.settings import get_dice_settings


def main() -> None:
    settings = get_dice_settings()
    tune_gc()
    eventloop.run(serve(DiceApp(settings), settings))


if __name__ == "__main__":
    main()
