"""Each game declares the creation options it understands; anything else is refused."""

from __future__ import annotations

import pytest

from boulevard.games import REGISTRY, get_game
from boulevard.games.base import RulesError, check_options


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_declared_default_is_one_of_its_values(name: str) -> None:
    for option in REGISTRY[name].options.values():
        assert option.default in option.values


def test_las_vegas_takes_white_dice_true_or_false_and_nothing_else() -> None:
    game = get_game("las_vegas")
    check_options(game, (("white_dice", "true"),))
    check_options(game, ())
    for bad in [(("white_dice", "maybe"),), (("turbo", "yes"),), (("White_Dice", "true"),)]:
        with pytest.raises(RulesError) as err:
            check_options(game, bad)
        assert err.value.code == "bad_option"
    with pytest.raises(RulesError, match="given twice"):
        check_options(game, (("white_dice", "true"), ("white_dice", "false")))


def test_lords_of_vegas_takes_no_options() -> None:
    with pytest.raises(RulesError, match="has no option 'turbo' \\(options: none\\)"):
        check_options(get_game("lords_of_vegas"), (("turbo", "yes"),))
