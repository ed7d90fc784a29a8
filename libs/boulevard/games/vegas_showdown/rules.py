"""Vegas Showdown rules as a decider: new_game / decide / evolve / chance, plus what seats may
do and see. Every rule of the rulebook (seed vegas_showdown.es.txt) lives here or in
`sheet.py` (placement); choices the rulebook leaves open are in docs/games/vegas-showdown.md.

A turn: the button holder's `StartTurn` lowers prices, flips tiles (event cards first) and
pays income; then seats act clockwise from the button (bid, renovate or publicity; an
out-bid seat acts again when its turn in order comes round); when nobody must act, the
buyers pay and, in turn order, each places a tile or sets it aside; then the button passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypeVar, assert_never

from boulevard.games.base import (
    BANK,
    ChanceKind,
    ChanceRequest,
    ChanceResolved,
    GameConfig,
    Outcome,
    RulesError,
    Seat,
    Transfer,
    seat_account,
)
from boulevard.games.vegas_showdown import data, sheet
from boulevard.games.vegas_showdown.data import BASIC_KINDS, SIZES, BasicTrack, EventCard
from boulevard.games.vegas_showdown.types import (
    ROLL_FIRST_PLAYER,
    SHUFFLE_EVENTS,
    SHUFFLE_STACK_PREFIX,
    STAGED_COMMANDS,
    ActionKind,
    AnyEvent,
    Bid,
    BidPlaced,
    CancelRenovation,
    Command,
    Event,
    EventCardDone,
    EventCardDrawn,
    FinalScore,
    FinishRenovation,
    GameEnded,
    GameStarted,
    IncomeCollected,
    Phase,
    Placement,
    PlaceTile,
    PricesLowered,
    Publicity,
    PublicityTaken,
    Renovate,
    Renovated,
    RenovationCancelled,
    RenovationStaged,
    SeatState,
    SeatView,
    SheetTile,
    StageRenovation,
    StartTurn,
    TileBought,
    TileFlipped,
    TilePlaced,
    Track,
    TrackView,
    TurnEnded,
    VegasShowdownState,
    VegasShowdownView,
)

SHEET_OPTION = "sheet"
MAX_RENOVATE = 2  # tiles removed, and tiles placed, by one Renovate
T = TypeVar("T")

State = VegasShowdownState


def initial_state() -> State:
    return VegasShowdownState()


# --- lookups ----------------------------------------------------------------------------


def basic_track(name: str) -> BasicTrack | None:
    for track in data.DATA.basic_tracks:
        if track.track == name:
            return track
    return None


def track_values(name: str) -> tuple[int, ...]:
    """The spaces of a track, ascending: the amounts a bid may name."""
    basic = basic_track(name)
    return basic.values if basic is not None else data.DATA.premier_values


def _track_index(state: State, name: str) -> int | None:
    for i, track in enumerate(state.tracks):
        if track.name == name:
            return i
    return None


def _stack_index(basic: BasicTrack) -> int:
    return BASIC_KINDS.index(basic.tile)


def offered_tile(state: State, track: Track) -> int | None:
    """The tile a bid on `track` would buy: the premier space's tile, or the basic stack's
    next tile not already claimed by a standing bid on a sibling track (5 players: two
    Slots tracks share the Slots stack)."""
    basic = basic_track(track.name)
    if basic is None:
        return track.tile
    stack = state.basic_stacks[_stack_index(basic)]
    claimed = sum(
        1
        for t in state.tracks
        if t.name != track.name
        and t.bidder is not None
        and (b := basic_track(t.name)) is not None
        and b.tile == basic.tile
    )
    return stack[claimed] if len(stack) > claimed else None


def population(s: SeatState) -> int:
    return data.DATA.start_population + sum(sheet.kind_of(p.tile).population for p in s.sheet)


def revenue(s: SeatState) -> int:
    return data.DATA.start_revenue + sum(sheet.kind_of(p.tile).revenue for p in s.sheet)


def income(s: SeatState) -> int:
    return min(population(s), revenue(s))


def _put(values: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*values[:index], value, *values[index + 1 :])


def _pay(source: str, target: str, amount: int, reason: str) -> tuple[Transfer, ...]:
    return (Transfer(source, target, amount, reason),) if amount > 0 else ()


# --- setup ------------------------------------------------------------------------------


def new_game(config: GameConfig) -> tuple[Event, ...]:
    """Seat the players with $20 each; the first player and the shuffles follow as chance."""
    d = data.DATA
    if not d.min_players <= config.players <= d.max_players:
        raise RulesError(
            "bad_player_count",
            f"Vegas Showdown is for {d.min_players} to {d.max_players} players, "
            f"not {config.players}",
        )
    layout = config.option(SHEET_OPTION, d.default_sheet)
    if layout not in d.sheets:
        raise RulesError("bad_option", f"option {SHEET_OPTION} is one of {', '.join(d.sheets)}")
    return (
        GameStarted(
            players=config.players,
            sheet=layout,
            transfers=tuple(
                Transfer(BANK, seat_account(s), d.start_money, "vegas_showdown starting money")
                for s in range(config.players)
            ),
        ),
    )


def stack_part(size: str, back: str) -> tuple[int, ...]:
    """The premier tiles of one size and back, in id order (before shuffling)."""
    d = data.DATA
    return tuple(
        t
        for t, key in enumerate(d.tile_kind)
        if d.kinds[key].premier and d.kinds[key].size == size and d.kinds[key].back == back
    )


def _parts() -> list[tuple[str, tuple[int, ...]]]:
    return [(f"{size}_{back}", stack_part(size, back)) for size in SIZES for back in ("A", "B")]


def _start(state: State, event: GameStarted) -> State:
    d = data.DATA
    n = event.players
    removed: list[int] = []
    stacks: list[tuple[int, ...]] = []
    for key in BASIC_KINDS:
        tiles = d.tiles_of(key)
        cut = d.three_player_removed if n == 3 else 0
        removed.extend(tiles[:cut])
        stacks.append(tiles[cut:])
    tracks = [
        Track(name=b.track, tile=None, minimum=b.values[0])
        for b in d.basic_tracks
        if b.players <= n
    ]
    tracks += [Track(name=name, tile=None, minimum=0) for name, p in d.premier_spaces if p <= n]
    # A part of 0 or 1 tiles needs no shuffle: it is laid out as it is.
    fixed = tuple((name, ids) for name, ids in _parts() if len(ids) <= 1)
    pending = (
        ROLL_FIRST_PLAYER,
        *(SHUFFLE_STACK_PREFIX + name for name, ids in _parts() if len(ids) > 1),
        SHUFFLE_EVENTS,
    )
    return replace(
        state,
        phase=Phase.SETUP,
        players=n,
        sheet=event.sheet,
        pending_chance=pending,
        seats=tuple(_apply(tuple(SeatState(cash=0) for _ in range(n)), event.transfers)),
        tracks=tuple(tracks),
        basic_stacks=tuple(stacks),
        stack_parts=fixed,
        removed=tuple(removed),
    )


def _lay_out_premier(state: State) -> State:
    """Setup's last step: A parts on B parts, then the top tile of each stack onto the
    first three premier spaces with its minimum-bid marker."""
    parts = dict(state.stack_parts)
    stacks = [parts[f"{size}_A"] + parts[f"{size}_B"] for size in SIZES]
    tracks = list(state.tracks)
    premier = [i for i, t in enumerate(tracks) if basic_track(t.name) is None]
    for size_index, track_index in zip(range(len(SIZES)), premier, strict=False):
        tile = stacks[size_index][0]
        stacks[size_index] = stacks[size_index][1:]
        tracks[track_index] = replace(
            tracks[track_index], tile=tile, minimum=sheet.kind_of(tile).bid
        )
    return replace(
        state,
        phase=Phase.TURN_START,
        turn=1,
        current=state.button,
        premier_stacks=tuple(stacks),
        stack_parts=(),
        tracks=tuple(tracks),
    )


# --- decide -----------------------------------------------------------------------------


def decide(command: Command, state: State) -> tuple[Event, ...]:
    """The events a command causes, or RulesError with nothing changed."""
    if state.staging and not isinstance(command, STAGED_COMMANDS):
        raise RulesError("renovating", "finish or cancel the renovation you are staging first")
    match command:
        case StartTurn(seat=seat):
            return _start_turn(state, seat)
        case Bid():
            return _bid(state, command)
        case Renovate():
            return _renovate(state, command)
        case Publicity():
            return _publicity(state, command)
        case PlaceTile():
            return _place_tile(state, command)
        case StageRenovation():
            return _stage_renovation(state, command)
        case FinishRenovation(seat=seat):
            _require_staging(state, seat)
            return _renovate(state, Renovate(seat, state.staged_remove, state.staged_place))
        case CancelRenovation(seat=seat):
            _require_staging(state, seat)
            return (RenovationCancelled(seat),)
        case _:
            assert_never(command)


def decide_v1(command: Command, state: State) -> tuple[Event, ...]:
    """Rules version 1: today's decisions without the staged renovation (its games never
    staged one, so every other command is decided as then)."""
    if isinstance(command, STAGED_COMMANDS):
        raise RulesError(
            "malformed", "this game plays rules version 1, which has no staged renovation"
        )
    return decide(command, state)


def _require_seat(state: State, seat: int) -> None:
    if state.phase is Phase.SETUP:
        raise RulesError("not_started", "the game has not started yet")
    if state.phase is Phase.FINISHED:
        raise RulesError("game_over", "the game is over")
    if not 0 <= seat < state.players:
        raise RulesError("bad_seat", f"there is no seat {seat} at this table")


def _require_action_turn(state: State, seat: int) -> SeatState:
    _require_seat(state, seat)
    if state.phase is not Phase.ACTIONS:
        raise RulesError("wrong_phase", "actions are chosen only after the turn has started")
    if seat != state.current:
        raise RulesError("not_your_turn", f"it is seat {state.current}'s turn to act")
    return state.seats[seat]


def _start_turn(state: State, seat: int) -> tuple[Event, ...]:
    _require_seat(state, seat)
    if state.phase is not Phase.TURN_START:
        raise RulesError("wrong_phase", "the turn has already started")
    if seat != state.button:
        raise RulesError("not_button", f"seat {state.button} holds the button")
    events: list[Event] = []
    s = state

    def add(event: Event) -> None:
        nonlocal s
        events.append(event)
        s = evolve(s, event)

    if s.turn > 1:  # step 1, skipped on the first turn
        add(_lower_prices(s))
    for key in s.in_play:  # cards left in play from earlier turns, if they can be done now
        done, fame, transfers = _card_effect(s, data.DATA.event(key))
        if done:
            add(EventCardDone(card=key, fame=fame, transfers=transfers))
    for track in [t.name for t in s.tracks if basic_track(t.name) is None]:
        index = _track_index(s, track)
        assert index is not None
        if s.tracks[index].tile is not None:
            continue
        # 33 cards outlast the 30 premier tiles: each card drawn flips one tile or ends the
        # game, so the deck cannot run out first.
        card = data.DATA.event(s.deck[0])
        done, fame, transfers = _card_effect(s, card)
        add(EventCardDrawn(card=card.key, done=done, fame=fame, transfers=transfers))
        stack = s.premier_stacks[SIZES.index(card.stack)]
        if not stack:
            add(final_scoring(s, "stack_empty"))
            return tuple(events)
        tile = stack[0]
        add(TileFlipped(track=track, tile=tile, minimum=sheet.kind_of(tile).bid))
    add(
        IncomeCollected(
            transfers=tuple(
                t
                for i, seat_state in enumerate(s.seats)
                for t in _pay(BANK, seat_account(i), income(seat_state), "income")
            )
        )
    )
    return tuple(events)


def _lower_prices(state: State) -> PricesLowered:
    circles = data.DATA.premier_circles
    minimums: list[tuple[str, int]] = []
    removed: list[int] = []
    for track in state.tracks:
        if track.tile is None:
            continue
        index = circles.index(track.minimum)
        if index == 0:
            removed.append(track.tile)  # off the lowest circle: out of the game
        else:
            minimums.append((track.name, circles[index - 1]))
    return PricesLowered(minimums=tuple(minimums), removed=tuple(removed))


def family_kinds(family: str | None) -> frozenset[str]:
    """An event card's family: the basic tile and its fancy tile."""
    if family is None:
        return frozenset()
    return frozenset(k for k in (family, f"fancy_{family}") if k in data.DATA.kinds)


def _card_effect(
    state: State, card: EventCard
) -> tuple[bool, tuple[int, ...], tuple[Transfer, ...]]:
    """(done, Fame per seat, money) of carrying out a card now. Only the cards for owners of
    a tile family can wait: with no owner yet, they stay in play."""
    n = state.players
    none = (0,) * n
    reason = f"event {card.key}"
    if card.effect in ("fame_to_owners", "money_to_owners"):
        kinds = family_kinds(card.family)
        owners = [
            i
            for i, s in enumerate(state.seats)
            if any(sheet.kind_of(p.tile).key in kinds for p in s.sheet)
        ]
        if not owners:
            return False, none, ()
        if card.effect == "fame_to_owners":
            return True, tuple(card.amount if i in owners else 0 for i in range(n)), ()
        return (
            True,
            none,
            tuple(t for i in owners for t in _pay(BANK, seat_account(i), card.amount, reason)),
        )
    if card.effect in ("money_to_lowest_fame", "money_to_highest_revenue"):
        if card.effect == "money_to_lowest_fame":
            lowest = min(s.fame for s in state.seats)
            chosen = [i for i, s in enumerate(state.seats) if s.fame == lowest]
        else:
            highest = max(revenue(s) for s in state.seats)
            chosen = [i for i, s in enumerate(state.seats) if revenue(s) == highest]
        transfers = tuple(
            t for i in chosen for t in _pay(BANK, seat_account(i), card.amount, reason)
        )
        return True, none, transfers
    return True, none, ()


def _bid(state: State, command: Bid) -> tuple[Event, ...]:
    me = _require_action_turn(state, command.seat)
    index = _track_index(state, command.track)
    if index is None:
        raise RulesError("no_such_track", f"there is no track {command.track!r} in this game")
    track = state.tracks[index]
    if track.no_bid:
        raise RulesError("no_bid_marker", f"an event forbids bids on {track.name} this turn")
    tile = offered_tile(state, track)
    if tile is None:
        raise RulesError("no_tile", f"there is no tile to bid for on {track.name}")
    values = track_values(track.name)
    if command.amount not in values:
        raise RulesError(
            "not_on_track", f"bids go on a space of the track: {', '.join(map(str, values))}"
        )
    minimum = track.minimum
    if command.amount < minimum:
        raise RulesError("below_minimum", f"the minimum bid on {track.name} is {minimum}")
    if track.bidder is not None and command.amount <= track.bid:
        raise RulesError("not_above_bid", f"you must bid more than the standing {track.bid}")
    if command.amount > me.cash:
        raise RulesError("not_enough_cash", f"you have only ${me.cash}")
    placed = BidPlaced(
        seat=command.seat, track=track.name, amount=command.amount, outbid=track.bidder
    )
    return _after_action(state, placed)


def _renovate(state: State, command: Renovate) -> tuple[Event, ...]:
    me = _require_action_turn(state, command.seat)
    if state.no_renovate:
        raise RulesError("no_renovate_marker", "an event forbids Renovate this turn")
    if len(command.remove) > MAX_RENOVATE or len(command.place) > MAX_RENOVATE:
        raise RulesError("too_many_tiles", "Renovate removes at most 2 tiles and places at most 2")
    on_sheet = {p.tile for p in me.sheet}
    if len(set(command.remove)) != len(command.remove) or not set(command.remove) <= on_sheet:
        raise RulesError("not_on_sheet", "you can only remove tiles on your own sheet, once each")
    owned = set(me.aside) | set(command.remove)
    placing = [p.tile for p in command.place]
    if len(set(placing)) != len(placing) or not set(placing) <= owned:
        raise RulesError("not_owned", "you can only place tiles you own that are off your sheet")
    after = (*(p for p in me.sheet if p.tile not in command.remove), *command.place)
    problem = sheet.sheet_problem(sheet.layout(state.sheet), after)
    if problem is not None:
        raise problem
    return _after_action(
        state, Renovated(seat=command.seat, removed=command.remove, placed=command.place)
    )


def _staged_sheet(state: State, me: SeatState) -> tuple[Placement, ...]:
    """The seat's sheet as its staged renovation would leave it so far."""
    return (*(p for p in me.sheet if p.tile not in state.staged_remove), *state.staged_place)


def _staged_owned(state: State, me: SeatState) -> tuple[int, ...]:
    """The tiles a staged renovation may still place: off the sheet, or taken off by it."""
    placed = {p.tile for p in state.staged_place}
    return tuple(t for t in (*me.aside, *state.staged_remove) if t not in placed)


def _require_staging(state: State, seat: int) -> SeatState:
    me = _require_action_turn(state, seat)
    if not state.staging:
        raise RulesError("not_renovating", "no renovation is being staged")
    return me


def _stage_renovation(state: State, command: StageRenovation) -> tuple[Event, ...]:
    """One step of a renovation in stages. Each step is checked for what it alone can
    break (a tile off the sheet, twice, not yours; a placement off the grid or on another
    tile); the placement rules bind the whole sheet at FinishRenovation, as at Renovate,
    since a later step may mend what an earlier one leaves (a tile that only the second
    placement connects)."""
    me = _require_action_turn(state, command.seat)
    if state.no_renovate:
        raise RulesError("no_renovate_marker", "an event forbids Renovate this turn")
    if (command.remove is None) == (command.place is None):
        raise RulesError("malformed", "a renovation step removes one tile or places one")
    if command.remove is not None:
        if state.staged_place:
            raise RulesError("removals_first", "tiles come off the sheet before any is placed")
        if len(state.staged_remove) >= MAX_RENOVATE:
            raise RulesError("too_many_tiles", "Renovate removes at most 2 tiles")
        on_sheet = {p.tile for p in me.sheet}
        if command.remove not in on_sheet or command.remove in state.staged_remove:
            raise RulesError(
                "not_on_sheet", "you can only remove tiles on your own sheet, once each"
            )
    if command.place is not None:
        if len(state.staged_place) >= MAX_RENOVATE:
            raise RulesError("too_many_tiles", "Renovate places at most 2 tiles")
        if command.place.tile not in _staged_owned(state, me):
            raise RulesError(
                "not_owned", "you can only place tiles you own that are off your sheet"
            )
        problem = sheet.fit_problem(
            sheet.layout(state.sheet), _staged_sheet(state, me), command.place
        )
        if problem is not None:
            raise problem
    return (RenovationStaged(seat=command.seat, removed=command.remove, placed=command.place),)


def _check_one_placement(state: State, me: SeatState, placement: Placement | None) -> None:
    if placement is None:
        return
    if placement.tile not in me.aside:
        raise RulesError("not_owned", "you can only place a tile you own that is off your sheet")
    problem = sheet.addition_problem(sheet.analyse(sheet.layout(state.sheet), me.sheet), placement)
    if problem is not None:
        raise problem


def _publicity(state: State, command: Publicity) -> tuple[Event, ...]:
    me = _require_action_turn(state, command.seat)
    _check_one_placement(state, me, command.place)
    fame = 0 if state.pr_scandal else 1
    return _after_action(state, PublicityTaken(seat=command.seat, fame=fame, placed=command.place))


def _after_action(state: State, event: Event) -> tuple[Event, ...]:
    """An action's event, then what follows: the game's end on a full sheet, or the
    purchases when nobody must act any more."""
    after = evolve(state, event)
    if _someone_full(after):
        return (event, final_scoring(after, "sheet_full"))
    if after.current is not None:
        return (event,)
    return (event, *_purchases(after))


def _purchases(state: State) -> tuple[Event, ...]:
    """Bidding is over: each standing bid buys its tile, clockwise from the button."""
    events: list[Event] = []
    s = state
    for step in range(s.players):
        seat = (s.button + step) % s.players
        for track in s.tracks:
            if track.bidder != seat:
                continue
            tile = offered_tile(s, track)
            assert tile is not None  # a bid is only accepted on a tile it can buy
            bought = TileBought(
                seat=seat,
                track=track.name,
                tile=tile,
                price=track.bid,
                transfers=_pay(
                    seat_account(seat), BANK, track.bid, f"bought {sheet.kind_of(tile).name}"
                ),
            )
            events.append(bought)
            s = evolve(s, bought)
    if not events:
        events.append(TurnEnded(turn=s.turn, button=(s.button + 1) % s.players))
    return tuple(events)


def _place_tile(state: State, command: PlaceTile) -> tuple[Event, ...]:
    _require_seat(state, command.seat)
    if state.phase is not Phase.PLACING:
        raise RulesError("wrong_phase", "tiles are placed after bidding is over")
    if not state.to_place or state.to_place[0] != command.seat:
        raise RulesError("not_your_turn", "it is not your turn to place a tile")
    _check_one_placement(state, state.seats[command.seat], command.placement)
    placed = TilePlaced(seat=command.seat, placement=command.placement)
    after = evolve(state, placed)
    if _someone_full(after):
        return (placed, final_scoring(after, "sheet_full"))
    if after.to_place:
        return (placed,)
    return (placed, TurnEnded(turn=after.turn, button=(after.button + 1) % after.players))


def _someone_full(state: State) -> bool:
    layout = sheet.layout(state.sheet)
    return any(sheet.is_full(layout, s.sheet) for s in state.seats)


# --- final scoring ----------------------------------------------------------------------


def rank_fame(values: Sequence[int], points: Sequence[int]) -> tuple[int, ...]:
    """Fame per seat for a ranking (highest value first). Seats tied for a place share the
    Fame of that place and the places below it they cover, each share rounded down (the
    seed's sentence is cut off; these are the stand-in cases of the game data's 3.8)."""
    result = [0] * len(values)
    place = 0
    for value in sorted(set(values), reverse=True):
        tied = [i for i, v in enumerate(values) if v == value]
        covered = sum(points[place + k] for k in range(len(tied)) if place + k < len(points))
        for i in tied:
            result[i] = covered // len(tied)
        place += len(tied)
    return tuple(result)


def final_scoring(state: State, reason: str) -> GameEnded:
    d = data.DATA
    sc = d.scoring
    layout = sheet.layout(state.sheet)
    pops = rank_fame([population(s) for s in state.seats], sc.population_rank)
    revs = rank_fame([revenue(s) for s in state.seats], sc.revenue_rank)
    scores: list[FinalScore] = []
    transfers: list[Transfer] = []
    for i, s in enumerate(state.seats):
        casino = sheet.section_full(
            layout, s.sheet, layout.casino_cols, frozenset({"yellow", "green"})
        )
        hotel = sheet.section_full(layout, s.sheet, layout.hotel_cols, frozenset({"blue", "green"}))
        connected = sheet.entrances_connected(layout, s.sheet)
        money = s.cash // sc.dollars_per_fame
        three_quarter, full = sheet.diamonds(layout, s.sheet)
        parts = FinalScore(
            seat=i,
            casino_full=sc.casino_full if casino else 0,
            hotel_full=sc.hotel_full if hotel else 0,
            connected=sc.connected if connected else 0,
            population=pops[i],
            revenue=revs[i],
            money=money,
            three_quarter_diamonds=three_quarter * sc.three_quarter_diamond,
            full_diamonds=full * sc.full_diamond,
            total=0,
        )
        total = (
            parts.casino_full
            + parts.hotel_full
            + parts.connected
            + parts.population
            + parts.revenue
            + parts.money
            + parts.three_quarter_diamonds
            + parts.full_diamonds
        )
        scores.append(replace(parts, total=total))
        transfers.extend(
            _pay(seat_account(i), BANK, money * sc.dollars_per_fame, "converted to Fame")
        )
    return GameEnded(reason=reason, scores=tuple(scores), transfers=tuple(transfers))


# --- evolve -----------------------------------------------------------------------------


def _apply(seats: tuple[SeatState, ...], transfers: Sequence[Transfer]) -> tuple[SeatState, ...]:
    for t in transfers:
        for account, sign in ((t.source, -1), (t.target, 1)):
            if account.startswith("seat:"):
                i = int(account.removeprefix("seat:"))
                seats = _put(seats, i, replace(seats[i], cash=seats[i].cash + sign * t.amount))
    return seats


def _next_actor(seats: tuple[SeatState, ...], after: int) -> int | None:
    """Clockwise from `after`, the next seat that must act (`after` itself comes last)."""
    n = len(seats)
    for step in range(1, n + 1):
        seat = (after + step) % n
        if seats[seat].must_act:
            return seat
    return None


def _fame_delta(placed: Sequence[Placement], removed: Sequence[int]) -> int:
    return sum(sheet.kind_of(p.tile).fame for p in placed) - sum(
        sheet.kind_of(t).fame for t in removed
    )


def _acted(state: State, seat: int, kind: ActionKind, seats: tuple[SeatState, ...]) -> State:
    seats = _put(seats, seat, replace(seats[seat], action=kind, must_act=False))
    return replace(state, seats=seats, current=_next_actor(seats, seat))


def _of_family(track: Track, family: str | None) -> bool:
    """Whether a track offers a tile of an event card's family: the basic tile's own
    track(s), or a premier space holding the family's fancy tile."""
    kinds = family_kinds(family)
    basic = basic_track(track.name)
    if basic is not None:
        return basic.tile in kinds
    return track.tile is not None and sheet.kind_of(track.tile).key in kinds


def _flipped(state: State, track: Track, tile: int, minimum: int) -> Track:
    """A premier space with a newly flipped tile; a fancy tile flipped after this turn's
    no-bid card for its family gets a no-bid marker too."""
    track = replace(track, tile=tile, minimum=minimum)
    banned = any(_of_family(track, family) for family in banned_families(state))
    return replace(track, no_bid=True) if banned else track


def banned_families(state: State) -> tuple[str, ...]:
    """Families under a no-bid card drawn (and carried out) this turn."""
    return tuple(
        card.family
        for card in (data.DATA.event(key) for key in state.drawn if key in state.discards)
        if card.effect == "no_bid" and card.family is not None
    )


def _card_flags(state: State, card: EventCard) -> State:
    """A carried-out card's lasting marks: no-bid markers, no Renovate, PR Scandal, prices."""
    circles = data.DATA.premier_circles
    match card.effect:
        case "no_bid":
            tracks = tuple(
                replace(t, no_bid=True) if _of_family(t, card.family) else t for t in state.tracks
            )
            return replace(state, tracks=tracks)
        case "no_renovate":
            return replace(state, no_renovate=True)
        case "pr_scandal":
            return replace(state, pr_scandal=True)
        case "premier_price_up" | "premier_price_down":
            step = 1 if card.effect == "premier_price_up" else -1
            tracks = tuple(
                replace(
                    t,
                    minimum=circles[max(0, min(len(circles) - 1, circles.index(t.minimum) + step))],
                )
                if t.tile is not None
                else t
                for t in state.tracks
            )
            return replace(state, tracks=tracks)
        case _:
            return state


def _gain_fame(seats: tuple[SeatState, ...], fame: Sequence[int]) -> tuple[SeatState, ...]:
    return tuple(
        replace(s, fame=s.fame + f, event_fame=s.event_fame + f) if f else s
        for s, f in zip(seats, fame, strict=True)
    )


def evolve(state: State, event: AnyEvent) -> State:
    """Apply one recorded event. No checks, no randomness: the log is the truth."""
    match event:
        case GameStarted():
            return _start(state, event)
        case ChanceResolved():
            return _apply_chance(state, event)
        case PricesLowered(minimums=minimums, removed=removed):
            lowered = dict(minimums)
            tracks = tuple(
                replace(t, tile=None, minimum=0)
                if t.tile in removed
                else (replace(t, minimum=lowered[t.name]) if t.name in lowered else t)
                for t in state.tracks
            )
            return replace(state, tracks=tracks, removed=state.removed + removed)
        case EventCardDrawn(card=key, done=done, fame=fame, transfers=transfers):
            s = replace(
                state,
                deck=state.deck[1:],
                drawn=(*state.drawn, key),
                seats=_gain_fame(_apply(state.seats, transfers), fame),
            )
            if not done:
                return replace(s, in_play=(*s.in_play, key))
            return _card_flags(replace(s, discards=(*s.discards, key)), data.DATA.event(key))
        case EventCardDone(card=key, fame=fame, transfers=transfers):
            s = replace(
                state,
                in_play=tuple(k for k in state.in_play if k != key),
                discards=(*state.discards, key),
                seats=_gain_fame(_apply(state.seats, transfers), fame),
            )
            return _card_flags(s, data.DATA.event(key))
        case TileFlipped(track=name, tile=tile, minimum=minimum):
            size = SIZES.index(sheet.kind_of(tile).size)
            stacks = _put(state.premier_stacks, size, state.premier_stacks[size][1:])
            tracks = tuple(
                _flipped(state, t, tile, minimum) if t.name == name else t for t in state.tracks
            )
            return replace(state, premier_stacks=stacks, tracks=tracks)
        case IncomeCollected(transfers=transfers):
            return replace(
                state,
                seats=_apply(state.seats, transfers),
                phase=Phase.ACTIONS,
                current=state.button,
            )
        case BidPlaced(seat=seat, track=name, amount=amount, outbid=outbid):
            seats = state.seats
            if outbid is not None:
                seats = _put(
                    seats, outbid, replace(seats[outbid], action=ActionKind.NONE, must_act=True)
                )
            tracks = tuple(
                replace(t, bidder=seat, bid=amount) if t.name == name else t for t in state.tracks
            )
            return _acted(replace(state, tracks=tracks), seat, ActionKind.BID, seats)
        case RenovationStaged(removed=removed, placed=placed):
            return replace(
                state,
                staging=True,
                staged_remove=state.staged_remove + (() if removed is None else (removed,)),
                staged_place=state.staged_place + (() if placed is None else (placed,)),
            )
        case RenovationCancelled():
            return replace(state, staging=False, staged_remove=(), staged_place=())
        case Renovated(seat=seat, removed=removed, placed=placed):
            state = replace(state, staging=False, staged_remove=(), staged_place=())
            me = state.seats[seat]
            placed_ids = {p.tile for p in placed}
            me = replace(
                me,
                sheet=(*(p for p in me.sheet if p.tile not in removed), *placed),
                aside=tuple(t for t in (*me.aside, *removed) if t not in placed_ids),
                fame=me.fame + _fame_delta(placed, removed),
            )
            return _acted(state, seat, ActionKind.RENOVATE, _put(state.seats, seat, me))
        case PublicityTaken(seat=seat, fame=fame, placed=placed):
            me = state.seats[seat]
            me = replace(me, fame=me.fame + fame, publicity_fame=me.publicity_fame + fame)
            if placed is not None:
                me = _placed(me, placed)
            return _acted(state, seat, ActionKind.PUBLICITY, _put(state.seats, seat, me))
        case TileBought(seat=seat, track=name, tile=tile, transfers=transfers):
            seats = _apply(state.seats, transfers)
            seats = _put(seats, seat, replace(seats[seat], aside=(*seats[seat].aside, tile)))
            basic = basic_track(name)
            stacks = state.basic_stacks
            if basic is not None:
                i = _stack_index(basic)
                stacks = _put(stacks, i, tuple(t for t in stacks[i] if t != tile))
            tracks = tuple(_sold(t, basic is None) if t.name == name else t for t in state.tracks)
            to_place = (*state.to_place, seat)
            return replace(
                state,
                seats=seats,
                basic_stacks=stacks,
                tracks=tracks,
                phase=Phase.PLACING,
                to_place=to_place,
                current=to_place[0],
            )
        case TilePlaced(seat=seat, placement=placement):
            seats = state.seats
            if placement is not None:
                seats = _put(seats, seat, _placed(seats[seat], placement))
            to_place = state.to_place[1:]
            return replace(
                state, seats=seats, to_place=to_place, current=to_place[0] if to_place else None
            )
        case TurnEnded(turn=turn, button=button):
            return replace(
                state,
                phase=Phase.TURN_START,
                turn=turn + 1,
                button=button,
                current=button,
                seats=tuple(replace(s, action=ActionKind.NONE, must_act=True) for s in state.seats),
                tracks=tuple(
                    replace(t, bidder=None, bid=0, no_bid=False)
                    if t.bidder is not None or t.no_bid
                    else t
                    for t in state.tracks
                ),
                no_renovate=False,
                pr_scandal=False,
                drawn=(),
                to_place=(),
            )
        case GameEnded(reason=reason, scores=scores, transfers=transfers):
            seats = _apply(state.seats, transfers)
            seats = tuple(
                replace(s, fame=s.fame + score.total)
                for s, score in zip(seats, scores, strict=True)
            )
            return replace(
                state,
                phase=Phase.FINISHED,
                seats=seats,
                current=None,
                end_reason=reason,
                scores=scores,
                to_place=(),
            )
        case _:
            assert_never(event)


def _sold(track: Track, premier: bool) -> Track:
    """A track after its tile was bought: no bid; a premier space is empty again."""
    track = replace(track, bidder=None, bid=0)
    return replace(track, tile=None, minimum=0) if premier else track


def _placed(me: SeatState, placement: Placement) -> SeatState:
    return replace(
        me,
        sheet=(*me.sheet, placement),
        aside=tuple(t for t in me.aside if t != placement.tile),
        fame=me.fame + sheet.kind_of(placement.tile).fame,
    )


def _apply_chance(state: State, event: ChanceResolved) -> State:
    purpose = event.purpose
    s = replace(state, pending_chance=state.pending_chance[1:])
    if purpose == ROLL_FIRST_PLAYER:
        s = replace(s, button=event.values[0] - 1)
    elif purpose == SHUFFLE_EVENTS:
        s = replace(s, deck=tuple(data.DATA.events[v].key for v in event.values))
    elif purpose.startswith(SHUFFLE_STACK_PREFIX):
        name = purpose.removeprefix(SHUFFLE_STACK_PREFIX)
        ids = dict(_parts())[name]
        s = replace(s, stack_parts=(*s.stack_parts, (name, tuple(ids[v] for v in event.values))))
    else:
        raise ValueError(f"Vegas Showdown has no chance named {purpose!r}")
    return _lay_out_premier(s) if not s.pending_chance else s


# --- chance -----------------------------------------------------------------------------


def chance(state: State) -> ChanceRequest | None:
    """Setup's randomness, in order: the first player, each premier stack part, the event
    deck. After that the game needs none: every draw is the top of a shuffled pile."""
    if state.phase is not Phase.SETUP or not state.pending_chance:
        return None
    purpose = state.pending_chance[0]
    if purpose == ROLL_FIRST_PLAYER:
        return ChanceRequest(purpose, ChanceKind.ROLL, 1, state.players)
    if purpose == SHUFFLE_EVENTS:
        return ChanceRequest(purpose, ChanceKind.SHUFFLE, len(data.DATA.events))
    ids = dict(_parts())[purpose.removeprefix(SHUFFLE_STACK_PREFIX)]
    return ChanceRequest(purpose, ChanceKind.SHUFFLE, len(ids))


# --- what a seat may do -----------------------------------------------------------------


def placements(state: State, seat: Seat) -> list[Placement]:
    """Every legal single placement of the seat's off-sheet tiles (one tile per kind: copies
    of a kind are interchangeable), each distinct rotation once."""
    me = state.seats[seat]
    analysed = sheet.analyse(sheet.layout(state.sheet), me.sheet)
    found: list[Placement] = []
    seen: set[str] = set()
    for tile in me.aside:
        kind = sheet.kind_of(tile)
        if kind.key in seen:
            continue
        seen.add(kind.key)
        found.extend(tile_placements(analysed, tile))
    return found


def tile_placements(analysed: sheet.Analysed, tile: int) -> list[Placement]:
    """Where `tile` may go on an analysed (valid) sheet."""
    return sheet.candidate_placements(analysed, tile)


def bids(state: State, seat: Seat) -> list[Bid]:
    me = state.seats[seat]
    found: list[Bid] = []
    for track in state.tracks:
        if track.no_bid or offered_tile(state, track) is None:
            continue
        floor = track.bid + 1 if track.bidder is not None else track.minimum
        found.extend(
            Bid(seat=seat, track=track.name, amount=v)
            for v in track_values(track.name)
            if floor <= v <= me.cash
        )
    return found


def legal_commands(state: State, seat: Seat) -> tuple[Command, ...]:
    """What `seat` may do now. Renovations are listed with at most one removal or one
    placement, and every step that may start or go on with a renovation in stages
    (`staged_steps`): so every 0-2 / 0-2 renovation `decide` accepts is reachable from the
    list, a step at a time, up to which copy of a kind is placed."""
    if not 0 <= seat < state.players or state.phase in (Phase.SETUP, Phase.FINISHED):
        return ()
    if state.phase is Phase.TURN_START:
        return (StartTurn(seat),) if seat == state.button else ()
    if state.phase is Phase.PLACING:
        if not state.to_place or state.to_place[0] != seat:
            return ()
        return (PlaceTile(seat), *(PlaceTile(seat, p) for p in placements(state, seat)))
    if seat != state.current:
        return ()
    if state.staging:
        return tuple(staged_steps(state, seat))
    spots = placements(state, seat)
    commands: list[Command] = [*bids(state, seat), Publicity(seat)]
    commands.extend(Publicity(seat, p) for p in spots)
    if not state.no_renovate:
        me = state.seats[seat]
        analysed = sheet.analyse(sheet.layout(state.sheet), me.sheet)
        commands.append(Renovate(seat))
        for p in me.sheet:
            if sheet.removal_problem(analysed, p.tile) is None:
                commands.append(Renovate(seat, remove=(p.tile,)))
        commands.extend(Renovate(seat, place=(p,)) for p in spots)
        commands.extend(staged_steps(state, seat))
    return tuple(commands)


def legal_commands_v1(state: State, seat: Seat) -> tuple[Command, ...]:
    """Rules version 1's list: no staged renovation."""
    return tuple(c for c in legal_commands(state, seat) if not isinstance(c, STAGED_COMMANDS))


def staged_steps(state: State, seat: Seat) -> list[Command]:
    """The steps a renovation in stages may take next (the seat is the one to act and may
    renovate): any tile of its sheet off (up to 2, before any placement), any tile it may
    place (one per kind) wherever it fits the grid and no other tile, each distinct
    rotation once (up to 2); and, while staging, finishing when `Renovate` would accept the
    whole, and cancelling."""
    me = state.seats[seat]
    steps: list[Command] = []
    if not state.staged_place and len(state.staged_remove) < MAX_RENOVATE:
        steps.extend(
            StageRenovation(seat, remove=p.tile)
            for p in me.sheet
            if p.tile not in state.staged_remove
        )
    if len(state.staged_place) < MAX_RENOVATE:
        layout = sheet.layout(state.sheet)
        tiles = _staged_sheet(state, me)
        seen: set[str] = set()
        for tile in _staged_owned(state, me):
            kind = sheet.kind_of(tile)
            if kind.key in seen:
                continue
            seen.add(kind.key)
            steps.extend(
                StageRenovation(seat, place=p)
                for p in sheet.fitting_placements(layout, tiles, tile)
            )
    if state.staging:
        try:
            _renovate(state, Renovate(seat, state.staged_remove, state.staged_place))
            steps.append(FinishRenovation(seat))
        except RulesError:
            pass  # not yet a legal sheet: more steps, or cancel
        steps.append(CancelRenovation(seat))
    return steps


# --- what a seat may see ----------------------------------------------------------------


def _track_view(state: State, track: Track) -> TrackView:
    basic = basic_track(track.name)
    tile = track.tile
    if basic is not None:
        stack = state.basic_stacks[_stack_index(basic)]
        tile = stack[0] if stack else None
        left = len(stack)
    else:
        left = 0 if track.tile is None else 1
    return TrackView(
        name=track.name,
        tile=tile,
        tile_name=sheet.kind_of(tile).name if tile is not None else "",
        minimum=track.minimum,
        top=track_values(track.name)[-1],
        bidder=track.bidder,
        bid=track.bid,
        no_bid=track.no_bid,
        left=left,
    )


def view(state: State, seat: Seat | None) -> VegasShowdownView:
    """Everything on the table; of the premier stacks and the event deck, only their sizes."""
    return VegasShowdownView(
        seat=seat,
        phase=state.phase,
        players=state.players,
        sheet=state.sheet,
        turn=state.turn,
        button=state.button,
        current=state.current,
        to_place=state.to_place,
        tracks=tuple(_track_view(state, t) for t in state.tracks),
        seats=tuple(
            SeatView(
                seat=i,
                cash=s.cash,
                fame=s.fame,
                population=population(s),
                revenue=revenue(s),
                sheet=tuple(
                    SheetTile(p.tile, sheet.kind_of(p.tile).name, p.col, p.row, p.rotation)
                    for p in s.sheet
                ),
                aside=s.aside,
                action=s.action,
                must_act=s.must_act,
            )
            for i, s in enumerate(state.seats)
        ),
        premier_left=tuple(len(s) for s in state.premier_stacks),
        events_left=len(state.deck),
        drawn=state.drawn,
        in_play=state.in_play,
        discards=state.discards,
        removed=state.removed,
        no_renovate=state.no_renovate,
        pr_scandal=state.pr_scandal,
        end_reason=state.end_reason,
        scores=state.scores,
        staging=state.staging,
        staged_remove=state.staged_remove,
        staged_place=state.staged_place,
    )


# --- outcome ----------------------------------------------------------------------------


def money(state: State) -> Mapping[Seat, int]:
    return {i: s.cash for i, s in enumerate(state.seats)}


def ranking(state: State) -> tuple[tuple[Seat, ...], ...]:
    """Most Fame first; ties by the money left after converting full $10s; then shared."""
    keys = sorted({(s.fame, s.cash) for s in state.seats}, reverse=True)
    return tuple(
        tuple(i for i, s in enumerate(state.seats) if (s.fame, s.cash) == key) for key in keys
    )


def outcome(state: State) -> Outcome:
    fame = tuple(s.fame for s in state.seats)
    if state.phase is not Phase.FINISHED:
        return Outcome(finished=False, scores=fame)
    reason = {
        "sheet_full": "a hotel-casino sheet was filled",
        "stack_empty": "a premier stack was empty when a tile had to be flipped",
    }[state.end_reason]
    return Outcome(finished=True, ranking=ranking(state), scores=fame, reason=reason)
