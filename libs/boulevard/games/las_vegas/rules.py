"""Las Vegas rules as a decider: new_game / decide / evolve / chance, plus what seats may do
and see. Every rule of the rulebook (seed las_vegas.es.txt) lives here; choices the rulebook
leaves open are listed in docs/games/las-vegas.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
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
from boulevard.games.las_vegas.data import DATA, NOTE_VALUES
from boulevard.games.las_vegas.types import (
    ROLL_SPARE_WHITE,
    ROLL_TURN,
    SHUFFLE_BANKNOTES,
    AnyEvent,
    Award,
    Casino,
    CasinoPaidOut,
    CasinoView,
    Command,
    DicePlaced,
    Event,
    GameEnded,
    GameStarted,
    LasVegasState,
    LasVegasView,
    Phase,
    PlaceDice,
    Roll,
    RoundStarted,
)

WHITE_DICE_OPTION = "white_dice"

T = TypeVar("T")


def initial_state() -> LasVegasState:
    return LasVegasState()


# --- setup ------------------------------------------------------------------------------


def new_game(config: GameConfig) -> tuple[Event, ...]:
    """Seat the players; the oldest player (seat 0) holds the start card. The banknote
    shuffle follows as a chance request."""
    if not DATA.min_players <= config.players <= DATA.max_players:
        raise RulesError(
            "bad_player_count",
            f"Las Vegas is for {DATA.min_players} to {DATA.max_players} players, "
            f"not {config.players}",
        )
    option = config.option(WHITE_DICE_OPTION, "false").strip().lower()
    if option not in ("true", "false"):
        raise RulesError("bad_option", f"option {WHITE_DICE_OPTION} must be true or false")
    white = option == "true"
    if white and config.players not in DATA.white_dice_per_player:
        raise RulesError(
            "white_dice_player_count",
            "the neutral white dice variant is for 2 to 4 players",
        )
    return (GameStarted(players=config.players, white_dice=white, start_player=0),)


def deal(stack: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Fill casinos 1..6 in turn from the top of the stack until each holds at least the
    refill minimum (or the stack is empty), each casino's notes sorted highest first."""
    casinos: list[tuple[int, ...]] = []
    position = 0
    for _ in range(DATA.casinos):
        taken: list[int] = []
        while sum(NOTE_VALUES[n] for n in taken) < DATA.refill_minimum and position < len(stack):
            taken.append(stack[position])
            position += 1
        casinos.append(_sorted_notes(taken))
    return tuple(casinos)


def _sorted_notes(notes: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    # Stable: notes of equal value keep the order they were dealt in.
    return tuple(sorted(notes, key=lambda n: -NOTE_VALUES[n]))


def white_dice_each(players: int, white_dice: bool) -> int:
    return DATA.white_dice_per_player.get(players, 0) if white_dice else 0


def spare_white_dice(players: int, white_dice: bool) -> int:
    """White dice nobody holds (2 in a 3-player game): the start player throws them."""
    if not white_dice:
        return 0
    return DATA.white_dice_total - players * white_dice_each(players, white_dice)


# --- decide -----------------------------------------------------------------------------


def decide(command: Command, state: LasVegasState) -> tuple[Event, ...]:
    """The events a command causes, or RulesError with nothing changed."""
    match command:
        case PlaceDice(seat=seat, number=number):
            return _place_dice(state, seat, number)
        case _:
            assert_never(command)


def _place_dice(state: LasVegasState, seat: int, number: int) -> tuple[Event, ...]:
    if state.phase is Phase.SETUP:
        raise RulesError("not_started", "the game has not started yet")
    if state.phase is Phase.FINISHED:
        raise RulesError("game_over", "the game is over")
    if not 0 <= seat < state.players:
        raise RulesError("bad_seat", f"there is no seat {seat} at this table")
    if seat != state.current:
        raise RulesError("not_your_turn", f"it is seat {state.current}'s turn")
    roll = state.roll
    if roll is None:
        raise RulesError("not_rolled", "your dice have not been rolled yet")
    if not 1 <= number <= DATA.casinos:
        raise RulesError("bad_number", f"casinos are numbered 1 to {DATA.casinos}")
    if number not in roll.numbers:
        shown = ", ".join(str(n) for n in roll.numbers)
        raise RulesError("number_not_rolled", f"you did not roll a {number} (you rolled {shown})")
    placed = DicePlaced(
        seat=seat, casino=number, own=roll.own.count(number), white=roll.white.count(number)
    )
    after = evolve(state, placed)
    if dice_remain(after):
        return (placed,)
    return (placed, *_end_round(after))


def dice_remain(state: LasVegasState) -> bool:
    return any(state.dice_left) or any(state.white_left) or state.spare_white_pending


def _end_round(state: LasVegasState) -> tuple[Event, ...]:
    """All dice are placed: pay casinos 1..6 in order, then refill or end the game."""
    events: list[Event] = []
    for number in range(1, DATA.casinos + 1):
        paid = pay_casino(state, number)
        state = evolve(state, paid)
        events.append(paid)
    if state.round < DATA.rounds:
        events.append(
            RoundStarted(
                round=state.round + 1,
                start_player=(state.start_player + 1) % state.players,
                casinos=deal(state.stack),
            )
        )
    else:
        events.append(
            GameEnded(
                money=tuple(_money(state)),
                banknotes=tuple(len(h) for h in state.hands),
                ranking=ranking(state),
            )
        )
    return tuple(events)


WHITE = -1
"""The imaginary neutral player, as a participant in a casino's payout."""


def rank_dice(dice: tuple[int, ...], white: int) -> tuple[frozenset[int], tuple[int, ...]]:
    """A casino's participants (seats, and WHITE) split into those cancelled by a tie and
    the rest ranked by dice, most first: the ranked list takes the notes highest first."""
    counts = {seat: n for seat, n in enumerate(dice) if n > 0}
    if white > 0:
        counts[WHITE] = white
    multiplicity = Counter(counts.values())
    cancelled = frozenset(p for p, n in counts.items() if multiplicity[n] > 1)
    ranked = tuple(sorted((p for p in counts if p not in cancelled), key=lambda p: -counts[p]))
    return cancelled, ranked


def pay_casino(state: LasVegasState, number: int) -> CasinoPaidOut:
    """One casino's payout: tied counts cancel, then most dice take the best note, and so on;
    what the white player wins and what nobody wins goes under the stack."""
    casino = state.casinos[number - 1]
    cancelled, ranked = rank_dice(casino.dice, casino.white)
    winners = dict(zip(casino.notes, ranked, strict=False))  # note -> participant
    awards = tuple(
        Award(seat=p, note=note, value=NOTE_VALUES[note])
        for note, p in winners.items()
        if p != WHITE
    )
    return CasinoPaidOut(
        round=state.round,
        casino=number,
        cancelled=tuple(sorted(p for p in cancelled if p != WHITE)),
        white_cancelled=WHITE in cancelled,
        awards=awards,
        white_notes=tuple(note for note, p in winners.items() if p == WHITE),
        to_stack=tuple(note for note in casino.notes if winners.get(note, WHITE) == WHITE),
        transfers=tuple(
            Transfer(
                source=BANK,
                target=seat_account(a.seat),
                amount=a.value,
                reason=f"las_vegas round {state.round} casino {number} banknote {a.note}",
            )
            for a in awards
        ),
    )


# --- evolve -----------------------------------------------------------------------------


def evolve(state: LasVegasState, event: AnyEvent) -> LasVegasState:
    """Apply one recorded event. No checks, no randomness: the log is the truth."""
    match event:
        case GameStarted(players=players, white_dice=white, start_player=start):
            return replace(
                state,
                phase=Phase.SETUP,
                players=players,
                white_dice=white,
                start_player=start,
                current=start,
                hands=((),) * players,
            )
        case ChanceResolved():
            return _apply_chance(state, event)
        case DicePlaced(seat=seat, casino=number, own=own, white=white):
            casino = state.casinos[number - 1]
            placed = replace(
                casino,
                dice=_bump(casino.dice, seat, own),
                white=casino.white + white,
            )
            after = replace(
                state,
                casinos=_put(state.casinos, number - 1, placed),
                dice_left=_bump(state.dice_left, seat, -own),
                white_left=_bump(state.white_left, seat, -white),
                roll=None,
            )
            return replace(after, current=_next_to_play(after, seat))
        case CasinoPaidOut(casino=number, awards=awards, to_stack=to_stack):
            hands = state.hands
            for award in awards:
                hands = _put(hands, award.seat, (*hands[award.seat], award.note))
            emptied = Casino(notes=(), dice=(0,) * state.players, white=0)
            return replace(
                state,
                hands=hands,
                stack=state.stack + to_stack,
                casinos=_put(state.casinos, number - 1, emptied),
            )
        case RoundStarted(round=number, start_player=start, casinos=casinos):
            return _begin_round(state, number, start, casinos)
        case GameEnded():
            return replace(state, phase=Phase.FINISHED, roll=None)
        case _:
            assert_never(event)


def _apply_chance(state: LasVegasState, event: ChanceResolved) -> LasVegasState:
    if event.purpose == SHUFFLE_BANKNOTES:
        stack = tuple(event.values)
        return _begin_round(replace(state, stack=stack), 1, state.start_player, deal(stack))
    if event.purpose == ROLL_SPARE_WHITE:
        casinos = state.casinos
        for value in event.values:
            casino = casinos[value - 1]
            casinos = _put(casinos, value - 1, replace(casino, white=casino.white + 1))
        return replace(state, casinos=casinos, spare_white_pending=False)
    if event.purpose == ROLL_TURN:
        own = state.dice_left[state.current]
        return replace(state, roll=Roll(own=event.values[:own], white=event.values[own:]))
    raise ValueError(f"Las Vegas has no chance named {event.purpose!r}")


def _begin_round(
    state: LasVegasState, number: int, start: int, casinos: tuple[tuple[int, ...], ...]
) -> LasVegasState:
    dealt = {n for notes in casinos for n in notes}
    players = state.players
    return replace(
        state,
        phase=Phase.PLAYING,
        round=number,
        start_player=start,
        current=start,
        stack=tuple(n for n in state.stack if n not in dealt),
        casinos=tuple(Casino(notes=notes, dice=(0,) * players, white=0) for notes in casinos),
        dice_left=(DATA.dice_per_player,) * players,
        white_left=(white_dice_each(players, state.white_dice),) * players,
        spare_white_pending=spare_white_dice(players, state.white_dice) > 0,
        roll=None,
    )


def _next_to_play(state: LasVegasState, after: int) -> int:
    """Clockwise from `after`, the next seat with dice; a seat out of dice passes, so one
    seat may play several turns in a row. `after` itself comes last."""
    for step in range(1, state.players + 1):
        seat = (after + step) % state.players
        if state.dice_left[seat] + state.white_left[seat] > 0:
            return seat
    return after


def _bump(values: tuple[int, ...], index: int, delta: int) -> tuple[int, ...]:
    return _put(values, index, values[index] + delta)


def _put(values: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*values[:index], value, *values[index + 1 :])


# --- chance -----------------------------------------------------------------------------


def chance(state: LasVegasState) -> ChanceRequest | None:
    """The randomness needed before anyone can act: the banknote shuffle, the 3-player spare
    white dice at a round's start, then each turn's roll."""
    if state.phase is Phase.SETUP:
        if state.players and not state.stack:
            return ChanceRequest(SHUFFLE_BANKNOTES, ChanceKind.SHUFFLE, len(NOTE_VALUES))
        return None
    if state.phase is Phase.FINISHED:
        return None
    if state.spare_white_pending:
        spare = spare_white_dice(state.players, state.white_dice)
        return ChanceRequest(ROLL_SPARE_WHITE, ChanceKind.ROLL, spare, DATA.dice_sides)
    if state.roll is None:
        dice = state.dice_left[state.current] + state.white_left[state.current]
        if dice:
            return ChanceRequest(ROLL_TURN, ChanceKind.ROLL, dice, DATA.dice_sides)
    return None


# --- what a seat may do and see ---------------------------------------------------------


def legal_commands(state: LasVegasState, seat: Seat) -> tuple[Command, ...]:
    if state.phase is not Phase.PLAYING or state.roll is None or seat != state.current:
        return ()
    return tuple(PlaceDice(seat=seat, number=n) for n in state.roll.numbers)


def view(state: LasVegasState, seat: Seat | None) -> LasVegasView:
    """Everything on the table; of the stack, only how many notes it holds."""
    return LasVegasView(
        seat=seat,
        phase=state.phase,
        players=state.players,
        white_dice=state.white_dice,
        round=state.round,
        rounds=DATA.rounds,
        start_player=state.start_player,
        current=state.current if state.phase is Phase.PLAYING else None,
        casinos=tuple(
            CasinoView(
                number=i + 1,
                notes=tuple(NOTE_VALUES[n] for n in c.notes),
                dice=c.dice,
                white=c.white,
            )
            for i, c in enumerate(state.casinos)
        ),
        banknotes=tuple(tuple(NOTE_VALUES[n] for n in hand) for hand in state.hands),
        money=tuple(_money(state)),
        dice_left=state.dice_left,
        white_left=state.white_left,
        roll=state.roll,
        stack_size=len(state.stack),
    )


def _money(state: LasVegasState) -> list[int]:
    return [sum(NOTE_VALUES[n] for n in hand) for hand in state.hands]


def money(state: LasVegasState) -> Mapping[Seat, int]:
    """Each seat's money: the total value of the banknotes it has won."""
    return dict(enumerate(_money(state)))


def ranking(state: LasVegasState) -> tuple[tuple[Seat, ...], ...]:
    """Most money first; equal money, more banknotes first; equal on both, a shared place."""
    totals = _money(state)

    def key(seat: Seat) -> tuple[int, int]:
        return (totals[seat], len(state.hands[seat]))

    groups: list[tuple[Seat, ...]] = []
    for seat in sorted(range(state.players), key=lambda s: (-totals[s], -len(state.hands[s]))):
        if groups and key(groups[-1][0]) == key(seat):
            groups[-1] = (*groups[-1], seat)
        else:
            groups.append((seat,))
    return tuple(groups)


def outcome(state: LasVegasState) -> Outcome:
    if state.phase is not Phase.FINISHED:
        return Outcome(finished=False, scores=tuple(_money(state)))
    return Outcome(
        finished=True,
        ranking=ranking(state),
        scores=tuple(_money(state)),
        reason="most money after four rounds; ties broken by most banknotes",
    )
