"""Two Vegas Showdown bots, seeing only their seat's view: one random, one that bids within
its means for what it can place and builds towards joining its two entrances."""

from __future__ import annotations

from collections.abc import Sequence

from boulevard.games.base import RandomSource, Seat
from boulevard.games.vegas_showdown import sheet
from boulevard.games.vegas_showdown.data import TileKind
from boulevard.games.vegas_showdown.rules import tile_placements
from boulevard.games.vegas_showdown.types import (
    Bid,
    CancelRenovation,
    Command,
    FinishRenovation,
    Placement,
    PlaceTile,
    Publicity,
    Renovate,
    SeatView,
    StageRenovation,
    StartTurn,
    VegasShowdownView,
)

# What one more dollar of income is worth in Fame, roughly (income buys tiles and, at the
# end, Fame at $10 each over the turns left).
INCOME_WEIGHT = 2.5
# A bid is worth making when the tile's worth, in Fame, beats its price times this.
PRICE_WEIGHT = 0.25


def random_bot(
    view: VegasShowdownView, legal: Sequence[Command], seat: Seat, rng: RandomSource
) -> Command:
    """Uniform over the kinds of command offered, then uniform within the kind (so that a
    long list of placements does not drown the bids). Renovations in stages are never
    started at random (most lead nowhere); instead, half the one-step renovations it picks
    are played in stages: that step, then FinishRenovation."""
    if view.staging:
        finish = [c for c in legal if isinstance(c, FinishRenovation)]
        return finish[0] if finish else next(c for c in legal if isinstance(c, CancelRenovation))
    offered: list[Command] = [c for c in legal if not isinstance(c, StageRenovation)]
    offered = offered or list(legal)
    kinds = sorted({type(c).__name__ for c in offered})
    kind = kinds[rng.randrange(len(kinds))]
    choices = [c for c in offered if type(c).__name__ == kind]
    chosen = choices[rng.randrange(len(choices))]
    if isinstance(chosen, Renovate) and len(chosen.remove) + len(chosen.place) == 1:
        step = StageRenovation(
            seat,
            remove=chosen.remove[0] if chosen.remove else None,
            place=chosen.place[0] if chosen.place else None,
        )
        if step in legal and rng.randrange(2) == 0:
            return step
    return chosen


def _placements_of(me: SeatView) -> tuple[Placement, ...]:
    return tuple(Placement(t.tile, t.col, t.row, t.rotation) for t in me.sheet)


def placement_score(view: VegasShowdownView, me: SeatView, p: Placement) -> float:
    """How good a sheet is after `p`: joined entrances first, then the two connected fronts
    growing towards each other, then diamonds and tiles that fit their section."""
    layout = sheet.layout(view.sheet)
    tiles = (*_placements_of(me), p)
    b = sheet.board(layout, tiles)
    casino = b.reach(layout.casino_entrance)
    hotel = b.reach(layout.hotel_entrance)
    cols = {q.tile: [c for c, _ in sheet.cells_of(q)] for q in tiles}
    casino_front = max((c for t in casino for c in cols[t]), default=-1)
    hotel_front = min((c for t in hotel for c in cols[t]), default=layout.cols)
    three_quarter, full = sheet.diamonds(layout, tiles)
    colour = sheet.kind_of(p.tile).colour
    own_section = layout.casino_cols if colour == "yellow" else layout.hotel_cols
    fits = sum(1 for c, _ in sheet.cells_of(p) if colour == "green" or c in own_section)
    return (
        20.0 * bool(casino & hotel)
        + casino_front
        - hotel_front
        + 2.0 * three_quarter
        + 6.0 * full
        + 0.5 * fits
    )


def _worth(me: SeatView, kind: TileKind) -> float:
    now = min(me.population, me.revenue)
    gain = min(me.population + kind.population, me.revenue + kind.revenue) - now
    return kind.fame + INCOME_WEIGHT * gain + 0.3 * (kind.population + kind.revenue)


def _can_place(view: VegasShowdownView, me: SeatView, tile: int) -> bool:
    analysed = sheet.analyse(sheet.layout(view.sheet), _placements_of(me))
    return bool(tile_placements(analysed, tile))


def heuristic_bot(
    view: VegasShowdownView, legal: Sequence[Command], seat: Seat, rng: RandomSource
) -> Command:
    if view.staging:  # it never stages a renovation; one staged in its seat is dropped
        return next(c for c in legal if isinstance(c, CancelRenovation))
    legal = [c for c in legal if not isinstance(c, StageRenovation)] or list(legal)
    if len(legal) == 1 or isinstance(legal[0], StartTurn):
        return legal[0]
    me = view.seats[seat]
    if isinstance(legal[0], PlaceTile):
        spots = [c for c in legal if isinstance(c, PlaceTile) and c.placement is not None]
        if not spots:
            return legal[0]
        return max(spots, key=lambda c: placement_score(view, me, c.placement))  # type: ignore[arg-type]
    # Choosing an action: the cheapest bid on the best-value tile it can place, if worth it.
    cheapest: dict[str, Bid] = {}
    for c in legal:
        if isinstance(c, Bid) and (c.track not in cheapest or c.amount < cheapest[c.track].amount):
            cheapest[c.track] = c
    tracks = {t.name: t for t in view.tracks}
    best: tuple[float, Bid] | None = None
    for name, bid in cheapest.items():
        tile = tracks[name].tile
        if tile is None or not _can_place(view, me, tile):
            continue
        value = _worth(me, sheet.kind_of(tile)) - PRICE_WEIGHT * bid.amount
        if value > 0 and (best is None or value > best[0]):
            best = (value, bid)
    if best is not None:
        return best[1]
    publicity = [c for c in legal if isinstance(c, Publicity)]
    if publicity:
        placed = [c for c in publicity if c.place is not None]
        if placed:
            return max(placed, key=lambda c: placement_score(view, me, c.place))  # type: ignore[arg-type]
        return publicity[0]
    renovate = [c for c in legal if isinstance(c, Renovate) and not c.remove and not c.place]
    return renovate[0] if renovate else legal[rng.randrange(len(legal))]
