"""Bots for Lords of Vegas. Each sees only its seat's view and the legal commands, and draws
any randomness from the generator it is given (signature `boulevard.games.base.Bot`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from boulevard.games.base import RandomSource, Seat
from boulevard.games.lords_of_vegas.board import LOT_INDEX, LOTS
from boulevard.games.lords_of_vegas.rules import (
    STRIP,
    boss_of,
    casino_at,
    remaining_cards_by_colour,
)
from boulevard.games.lords_of_vegas.types import (
    AcceptTrade,
    AssignReorganizedDice,
    BuildCasino,
    DecideLayOff,
    EndTurn,
    Gamble,
    RejectTrade,
    RemodelCasino,
    ReorganizeCasino,
    SprawlCasino,
    State,
)


def random_bot(view: Any, legal: Sequence[Any], seat: Seat, rng: RandomSource) -> Any:
    """Any legal command, uniformly."""
    return legal[rng.randrange(len(legal))]


def _safe(view: State, lot_id: str) -> bool:
    """A tile whose card has been drawn can never be taken over."""
    return lot_id in view.discards


def _colour_weight(view: State, colour: str, lot_id: str) -> float:
    left = remaining_cards_by_colour(view)
    weight = float(left[colour])
    if LOTS[LOT_INDEX[lot_id]].borders_strip:
        weight += left[STRIP]
    return weight


def _build_score(view: State, seat: Seat, c: BuildCasino | SprawlCasino) -> float:
    lot = LOTS[LOT_INDEX[c.lot]]
    score = _colour_weight(view, c.colour, c.lot) + lot.die
    # Joining a casino we already run is worth more than a lone tile.
    for n in lot.neighbours:
        s = view.spaces[n]
        if s.tile == c.colour:
            boss = boss_of(view.spaces, casino_at(view.spaces, n))
            score += 4 if boss == seat else -3
    return score


def _remodel_gain(view: State, seat: Seat, c: RemodelCasino) -> int:
    """How many tiles bigger our bossed casino gets (0 if we would not stay boss)."""
    i = LOT_INDEX[c.lot]
    before = casino_at(view.spaces, i)
    spaces = list(view.spaces)
    for k in before.lots:
        spaces[k] = replace(spaces[k], tile=c.colour)
    after = casino_at(spaces, i)
    if boss_of(spaces, after) != seat:
        return 0
    return after.size - before.size


def heuristic_bot(view: Any, legal: Sequence[Any], seat: Seat, rng: RandomSource) -> Any:
    """Builds where the colours still to come pay, sprawls onto safe lots, merges by remodel
    when it stays boss, reorganizes cheap low dice, gambles only when short of money."""
    if len(legal) == 1:
        return legal[0]
    state: State = view
    cash = state.cash[seat]
    first = legal[0]
    if isinstance(first, DecideLayOff):
        bet = state.pending_gamble.amount if state.pending_gamble else 0
        return DecideLayOff(seat, lay_off=2 * bet > cash // 2)
    if isinstance(first, AcceptTrade | RejectTrade):
        offer = state.pending_trade
        if offer is not None:
            gets = offer.give_money + 4 * len(offer.give_lots) + 2 * len(offer.give_dice)
            gives = offer.take_money + 4 * len(offer.take_lots) + 2 * len(offer.take_dice)
            if offer.action is None and gets > gives + 1:
                return AcceptTrade(seat)
        return RejectTrade(seat)
    if isinstance(first, AssignReorganizedDice):
        # High values where no card can take them over.
        return max(
            legal,
            key=lambda c: sum(v * (2 if _safe(state, lot) else 1) for lot, v in c.placements),
        )
    if not any(isinstance(c, EndTurn) for c in legal):
        return legal[rng.randrange(len(legal))]

    builds = [c for c in legal if isinstance(c, BuildCasino)]
    if builds:
        return max(builds, key=lambda c: _build_score(state, seat, c))
    sprawls = [
        c
        for c in legal
        if isinstance(c, SprawlCasino)
        and (_safe(state, c.lot) or cash >= 4 * LOTS[LOT_INDEX[c.lot]].build_cost)
    ]
    if sprawls:
        return max(sprawls, key=lambda c: _build_score(state, seat, c))
    remodels = [
        (gain, c)
        for c in legal
        if isinstance(c, RemodelCasino) and (gain := _remodel_gain(state, seat, c)) > 0
    ]
    if remodels:
        return max(remodels, key=lambda gc: gc[0])[1]
    for c in legal:
        if isinstance(c, ReorganizeCasino):
            casino = casino_at(state.spaces, LOT_INDEX[c.lot])
            cost = sum(
                state.spaces[i].die for i in casino.lots if state.spaces[i].owner is not None
            )
            if cost <= 3 and cost <= cash // 3:
                return c
            if boss_of(state.spaces, casino) != seat and cost <= min(8, cash // 4):
                return c
    if cash < 6:
        bets = [c for c in legal if isinstance(c, Gamble) and c.amount <= 10]
        if bets:
            return max(bets, key=lambda c: c.amount)
    return next(c for c in legal if isinstance(c, EndTurn))
