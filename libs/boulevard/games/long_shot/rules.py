"""Long Shot rules as a decider: new_game / decide / evolve / chance, plus what seats may do
and see. Every rule of the rulebook (seed long_shot.es.txt) lives here; the choices it leaves
open are listed, each with its test, in docs/games/long-shot.md.

A turn: the horse features of the seat's horses pay (decided with the previous turn's end),
the horse die and the move die are rolled (chance), the seat may trade in its Reroll token
(`Reroll`) and then accepts the roll (`MoveHorses`), takes one action or passes, and draws.
Every printed number comes from `data.DATA`, looked up on the module at each use so that a
replaced data file is all it takes to replace a stand-in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from itertools import combinations, combinations_with_replacement, permutations
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
from boulevard.games.long_shot import data as _data
from boulevard.games.long_shot.data import CardKind, CardSpec, FeatureKind, LongShotData
from boulevard.games.long_shot.types import (
    ESCROW_BETS,
    ROLL_HORSE,
    ROLL_MOVE,
    ROLL_START,
    ROLL_STEAL,
    SHUFFLE_DECK,
    AnyEvent,
    Bet,
    BetPlaced,
    BetView,
    BuyHorse,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardView,
    Command,
    Die,
    DiscardCards,
    Event,
    FeatureUsed,
    GameStarted,
    HorseBought,
    HorseFinished,
    HorseMoved,
    HorseView,
    LongShotState,
    LongShotView,
    MoneyStolen,
    MoneyTaken,
    MoveHorses,
    Passed,
    PassTurn,
    Payout,
    Phase,
    PlaceBet,
    PlayCard,
    RaceEnded,
    Reroll,
    RerollUsed,
    RollResolved,
    Steal,
    StealStarted,
    TurnEnded,
    ZeroRolled,
)

T = TypeVar("T")
UNOWNED = -1


def _d() -> LongShotData:
    return _data.DATA


def initial_state() -> LongShotState:
    return LongShotState()


# --- setup ------------------------------------------------------------------------------


def new_game(config: GameConfig) -> tuple[Event, ...]:
    """Seat the players and pay each the starting money; the deck shuffle and the roll for
    first player follow as chance requests."""
    d = _d()
    if not d.min_players <= config.players <= d.max_players:
        raise RulesError(
            "bad_player_count",
            f"Long Shot is for {d.min_players} to {d.max_players} players, not {config.players}",
        )
    return (
        GameStarted(
            players=config.players,
            transfers=tuple(
                _transfer(BANK, seat_account(s), d.start_money, "long_shot starting money")
                for s in range(config.players)
            ),
        ),
    )


# --- small helpers ----------------------------------------------------------------------


def _transfer(source: str, target: str, amount: int, reason: str) -> Transfer:
    return Transfer(source=source, target=target, amount=amount, reason=reason)


def _put(values: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*values[:index], value, *values[index + 1 :])


def running(state: LongShotState, horse: int) -> bool:
    """Not yet across the finish line."""
    return state.positions[horse - 1] < _d().track_length


def in_no_bets(state: LongShotState, horse: int) -> bool:
    d = _d()
    return d.no_bets_from <= state.positions[horse - 1] < d.track_length


def leaders(state: LongShotState) -> tuple[int, ...]:
    """The horses in the lead: the running horses furthest along, all of them when tied.
    There is none before any horse has left the start, and none once any has finished."""
    if state.finished:
        return ()
    best = max(state.positions)
    if best == 0:
        return ()
    return tuple(h for h, p in enumerate(state.positions, 1) if p == best)


def bar_horses(state: LongShotState, seat: Seat) -> tuple[int, ...]:
    """The seat's running horses, other than the rolled one, with the rolled number on
    their move bar: those it may also move this turn."""
    rolled = state.horse_die
    if rolled is None:
        return ()
    d = _d()
    return tuple(
        h
        for h, owner in enumerate(state.owners, 1)
        if owner == seat and h != rolled and running(state, h) and rolled in d.horse(h).move_bar
    )


def _apply_transfers(money: tuple[int, ...], transfers: Iterable[Transfer]) -> tuple[int, ...]:
    cash = list(money)
    for t in transfers:
        if t.source.startswith("seat:"):
            cash[int(t.source[5:])] -= t.amount
        if t.target.startswith("seat:"):
            cash[int(t.target[5:])] += t.amount
    return tuple(cash)


# --- decide -----------------------------------------------------------------------------


def decide(command: Command, state: LongShotState) -> tuple[Event, ...]:
    """The events a command causes, or RulesError with nothing changed (rules version 2:
    a 0 re-rolled on the move die moves nothing and takes nothing)."""
    return _decide(command, state, rerolled_zero_steals=False)


def decide_v1(command: Command, state: LongShotState) -> tuple[Event, ...]:
    """Rules version 1 (release 1), kept for the games created under it: a re-rolled 0
    steals or draws like the opening roll's."""
    return _decide(command, state, rerolled_zero_steals=True)


def _decide(
    command: Command, state: LongShotState, *, rerolled_zero_steals: bool
) -> tuple[Event, ...]:
    match command:
        case Reroll(seat=seat, die=die):
            _require_turn(state, seat, Phase.MOVING)
            if state.rerolls[seat] < 1:
                raise RulesError("no_reroll", "you have no Reroll token left")
            return (RerollUsed(seat=seat, die=die),)
        case MoveHorses(seat=seat, horses=horses):
            _require_turn(state, seat, Phase.MOVING)
            return _move_horses(state, seat, horses, rerolled_zero_steals)
        case PlayCard(seat=seat, card=card, horse=horse, target=target):
            _require_turn(state, seat, Phase.ACTING)
            return _play_card(state, seat, card, horse, target)
        case BuyHorse(seat=seat, horse=horse):
            _require_turn(state, seat, Phase.ACTING)
            return _buy(state, seat, horse)
        case PlaceBet(seat=seat, horse=horse):
            _require_turn(state, seat, Phase.ACTING)
            problem = _bet_problem(state, seat, horse, _d().bet_amount, free=False, anywhere=False)
            if problem:
                raise RulesError(*problem)
            bet = _bet(seat, horse, _d().bet_amount, free=False)
            return (bet, *_end_action(evolve(state, bet), seat))
        case DiscardCards(seat=seat, cards=cards):
            _require_turn(state, seat, Phase.ACTING)
            return _discard(state, seat, cards)
        case PassTurn(seat=seat):
            _require_turn(state, seat, Phase.ACTING)
            passed = Passed(seat=seat)
            return (passed, *_end_action(evolve(state, passed), seat))
        case _:
            assert_never(command)


def _require_turn(state: LongShotState, seat: Seat, phase: Phase) -> None:
    if state.phase is Phase.FINISHED:
        raise RulesError("game_over", "the race is over")
    if state.phase is Phase.SETUP:
        raise RulesError("not_started", "the game has not started yet")
    if not 0 <= seat < state.players:
        raise RulesError("bad_seat", f"there is no seat {seat} at this table")
    if seat != state.current:
        raise RulesError("not_your_turn", f"it is seat {state.current}'s turn")
    if chance(state) is not None:
        raise RulesError("waiting_for_dice", "the dice (or the cards) are still being dealt")
    if state.phase is not phase:
        if phase is Phase.MOVING:
            raise RulesError("roll_done", "the roll is already resolved: take your action")
        raise RulesError("roll_first", "resolve your roll first (move, or use your Reroll)")


def _check_horse(horse: int | None) -> int:
    if horse is None or not 1 <= horse <= len(_d().horses):
        raise RulesError("bad_horse", f"there is no horse {horse}")
    return horse


def _move_horses(
    state: LongShotState, seat: Seat, horses: tuple[int, ...], rerolled_zero_steals: bool
) -> tuple[Event, ...]:
    rolled, spaces = state.horse_die, state.move_die
    assert rolled is not None and spaces is not None  # phase MOVING
    if len(set(horses)) != len(horses):
        raise RulesError("repeated_horse", "each horse moves at most once")
    if spaces == 0:
        if horses:
            raise RulesError("zero_moves_nothing", "a 0 on the move die moves no horse")
        if state.move_rerolled and not rerolled_zero_steals:
            # "Si se saca una 0 en el dado de movimiento (solo durante la tirada inicial
            # del dado)": the steal belongs to the opening roll's 0; a re-rolled 0 only
            # moves nothing.
            return (ZeroRolled(seat=seat, horse=rolled, victim=None), RollResolved(seat=seat))
        return _zero(state, seat, rolled)
    allowed = bar_horses(state, seat)
    for horse in horses:
        if horse not in allowed:
            raise RulesError(
                "not_on_move_bar",
                f"horse {horse} is not yours, is finished or has no {rolled} on its move bar",
            )
    events: list[Event] = []
    for horse in (rolled, *horses):
        state = _advance(state, horse, spaces, events)
        if state.phase is Phase.FINISHED:
            return tuple(events)
    events.append(RollResolved(seat=seat))
    return tuple(events)


def _zero(state: LongShotState, seat: Seat, rolled: int) -> tuple[Event, ...]:
    """A 0: nobody moves; the roller takes a random card from the rolled horse's owner, or
    draws from the deck when the bank owns the horse."""
    owner = state.owners[rolled - 1]
    victim = owner if owner not in (UNOWNED, seat) and state.hands[owner] else None
    events: list[Event] = [ZeroRolled(seat=seat, horse=rolled, victim=victim)]
    if owner == UNOWNED and state.deck:
        events.append(CardDrawn(seat=seat))
    events.append(RollResolved(seat=seat))
    return tuple(events)


def _advance(state: LongShotState, horse: int, spaces: int, events: list[Event]) -> LongShotState:
    """Move one running horse (never past the finish, never behind the start); when it
    crosses the line it takes the next place, and the third place ends the race."""
    d = _d()
    position = max(0, min(d.track_length, state.positions[horse - 1] + spaces))
    moved = HorseMoved(horse=horse, spaces=position - state.positions[horse - 1], position=position)
    events.append(moved)
    state = evolve(state, moved)
    if position >= d.track_length:
        done = HorseFinished(horse=horse, place=len(state.finished) + 1)
        events.append(done)
        state = evolve(state, done)
        if len(state.finished) >= len(d.purses):
            ended = race_end(state)
            events.append(ended)
            state = evolve(state, ended)
    return state


def race_end(state: LongShotState) -> RaceEnded:
    """Purses to the owners of the first three, then bet by bet: the stake to the bank and
    stake × odds to the bettor for a placed horse; stakes on every other horse to the bank."""
    d = _d()
    transfers: list[Transfer] = []
    purse = [0] * state.players
    winnings = [0] * state.players
    for place, horse in enumerate(state.finished, 1):
        owner = state.owners[horse - 1]
        if owner != UNOWNED:
            amount = d.purses[place - 1]
            purse[owner] += amount
            transfers.append(
                _transfer(BANK, seat_account(owner), amount, f"long_shot purse place {place}")
            )
        odds = d.horse(horse).odds(place)
        for bet in state.bets:
            if bet.horse != horse:
                continue
            transfers.append(
                _transfer(ESCROW_BETS, BANK, bet.amount, f"long_shot stake on horse {horse}")
            )
            won = bet.amount * odds
            winnings[bet.seat] += won
            transfers.append(
                _transfer(
                    BANK,
                    seat_account(bet.seat),
                    won,
                    f"long_shot bet on horse {horse} place {place} at {odds}:1",
                )
            )
    for bet in state.bets:
        if bet.horse not in state.finished:
            transfers.append(
                _transfer(ESCROW_BETS, BANK, bet.amount, f"long_shot lost bet on {bet.horse}")
            )
    money = _apply_transfers(state.money, transfers)
    return RaceEnded(
        finish=state.finished,
        payouts=tuple(
            Payout(seat=s, purse=purse[s], winnings=winnings[s])
            for s in range(state.players)
            if purse[s] or winnings[s]
        ),
        money=money,
        ranking=ranking(money),
        transfers=tuple(transfers),
    )


def ranking(money: tuple[int, ...]) -> tuple[tuple[Seat, ...], ...]:
    """Most money first; equal money is a shared place."""
    groups: list[tuple[Seat, ...]] = []
    for seat in sorted(range(len(money)), key=lambda s: -money[s]):
        if groups and money[groups[-1][0]] == money[seat]:
            groups[-1] = (*groups[-1], seat)
        else:
            groups.append((seat,))
    return tuple(groups)


def _end_action(state: LongShotState, seat: Seat) -> tuple[Event, ...]:
    """After the action: draw (unless the deck is empty or the race is over), pass the
    dice clockwise, and pay the next seat's horse features for the start of its turn."""
    if state.phase is Phase.FINISHED:
        return ()
    events: list[Event] = []
    if state.deck:
        events.append(CardDrawn(seat=seat))
    nxt = (seat + 1) % state.players
    events.append(TurnEnded(seat=seat, next=nxt))
    events.extend(features(state, nxt))
    return tuple(events)


def features(state: LongShotState, seat: Seat) -> tuple[FeatureUsed, ...]:
    """The horse features of the seat's horses, in horse order; "lead" features are void
    once any horse has finished."""
    d = _d()
    lead = leaders(state)
    used: list[FeatureUsed] = []
    for horse, owner in enumerate(state.owners, 1):
        feature = d.horse(horse).feature
        if owner != seat or feature is None or feature.amount <= 0:
            continue
        if feature.kind is FeatureKind.LEAD_MONEY and horse not in lead:
            continue
        used.append(
            FeatureUsed(
                seat=seat,
                horse=horse,
                amount=feature.amount,
                transfers=(
                    _transfer(
                        BANK, seat_account(seat), feature.amount, f"long_shot feature {horse}"
                    ),
                ),
            )
        )
    return tuple(used)


def _money_taken(seat: Seat, amount: int, reason: str) -> MoneyTaken:
    return MoneyTaken(
        seat=seat,
        amount=amount,
        transfers=(_transfer(BANK, seat_account(seat), amount, f"long_shot {reason}"),),
    )


def _bet(seat: Seat, horse: int, amount: int, free: bool) -> BetPlaced:
    source = BANK if free else seat_account(seat)
    reason = f"long_shot {'free ' if free else ''}bet on horse {horse}"
    return BetPlaced(
        seat=seat,
        horse=horse,
        amount=amount,
        free=free,
        transfers=(_transfer(source, ESCROW_BETS, amount, reason),),
    )


Problem = tuple[str, str] | None
"""Why a command is refused, as RulesError's (code, message); None when it is allowed.
A tuple, not an exception, because legal_commands asks this of many candidates."""


def _bet_problem(
    state: LongShotState, seat: Seat, horse: int | None, amount: int, free: bool, anywhere: bool
) -> Problem:
    if horse is None or not 1 <= horse <= len(_d().horses):
        return ("bad_horse", f"there is no horse {horse}")
    if not running(state, horse):
        return ("horse_finished", "no bet of any kind on a horse that has finished")
    if not anywhere and in_no_bets(state, horse):
        return ("no_bets", f"horse {horse} is in the No Bets area")
    if not free and state.money[seat] < amount:
        return ("no_money", f"a ${amount} bet needs ${amount}")
    return None


def _buy(state: LongShotState, seat: Seat, horse: int) -> tuple[Event, ...]:
    horse = _check_horse(horse)
    if state.owners[horse - 1] != UNOWNED:
        raise RulesError("owned", f"horse {horse} already has an owner")
    if not running(state, horse):
        raise RulesError("horse_finished", "a horse that has finished is not for sale")
    price = _d().horse(horse).price
    if state.money[seat] < price:
        raise RulesError("no_money", f"horse {horse} costs ${price}")
    bought = HorseBought(
        seat=seat,
        horse=horse,
        price=price,
        transfers=(_transfer(seat_account(seat), BANK, price, f"long_shot buys horse {horse}"),),
    )
    return (bought, *_end_action(evolve(state, bought), seat))


def _discard(state: LongShotState, seat: Seat, cards: tuple[int, ...]) -> tuple[Event, ...]:
    d = _d()
    if len(cards) != d.discard_cards or len(set(cards)) != len(cards):
        raise RulesError("bad_discard", f"discard exactly {d.discard_cards} different cards")
    for card in cards:
        if card not in state.hands[seat]:
            raise RulesError("not_in_hand", f"card {card} is not in your hand")
    done = CardsDiscarded(
        seat=seat,
        cards=cards,
        transfers=(
            _transfer(BANK, seat_account(seat), d.discard_reward, "long_shot discard for cash"),
        ),
    )
    return (done, *_end_action(evolve(state, done), seat))


def card_problem(
    state: LongShotState, seat: Seat, spec: CardSpec, horse: int | None, target: int | None
) -> Problem:
    """Why this card cannot be played with these choices now (None: it can)."""
    needs_horse = spec.kind in (CardKind.MOVE, CardKind.BET) or (
        spec.kind is CardKind.WINNERS_CIRCLE and spec.steps != 0
    )
    if spec.kind is CardKind.HORSE:
        if horse not in (None, spec.horse):
            return ("bad_horse", f"this card moves horse {spec.horse} only")
    elif not needs_horse and horse is not None:
        return ("bad_horse", "this card names no horse")
    if spec.kind is not CardKind.STEAL and target is not None:
        return ("bad_target", "this card takes from nobody")
    match spec.kind:
        case CardKind.MONEY:
            return None
        case CardKind.MOVE:
            if horse is None or not 1 <= horse <= len(_d().horses):
                return ("bad_horse", f"there is no horse {horse}")
            if not running(state, horse):
                return ("horse_finished", "a horse that has finished never moves")
            return None
        case CardKind.HORSE:
            if not running(state, spec.horse):
                return ("horse_finished", "a horse that has finished never moves")
            return None
        case CardKind.STEAL:
            if target is None or not 0 <= target < state.players or target == seat:
                return ("bad_target", "name another seat to take from")
            if spec.amount == 0 and not state.hands[target]:
                return ("nothing_to_steal", f"seat {target} has no card")
            if spec.amount > 0 and state.money[target] == 0:
                return ("nothing_to_steal", f"seat {target} has no money")
            return None
        case CardKind.LUCKY_NUMBA:
            if state.horse_die != spec.number:
                return ("not_lucky", f"the horse die shows {state.horse_die}, not {spec.number}")
            return None
        case CardKind.BET:
            return _bet_problem(state, seat, horse, spec.amount, spec.free, spec.anywhere)
        case CardKind.WINNERS_CIRCLE:
            lead = leaders(state)
            if state.finished:
                return ("no_leader", "a horse has finished: there is no leader")
            if not lead:
                return ("no_leader", "no horse has left the start yet")
            if spec.steps != 0 and horse not in lead:
                return ("not_leading", f"horse {horse} is not in the lead")
            if spec.amount > 0 and not any(state.owners[h - 1] == seat for h in lead):
                return ("not_leading", "you own no horse in the lead")
            return None
        case _:
            assert_never(spec.kind)


def _play_card(
    state: LongShotState, seat: Seat, card: int, horse: int | None, target: int | None
) -> tuple[Event, ...]:
    if card not in state.hands[seat]:
        raise RulesError("not_in_hand", f"card {card} is not in your hand")
    spec = _d().card(card)
    problem = card_problem(state, seat, spec, horse, target)
    if problem:
        raise RulesError(*problem)
    played = CardPlayed(seat=seat, card=card, horse=horse, target=target)
    events: list[Event] = [played]
    state = evolve(state, played)
    effect: Event | None = None
    match spec.kind:
        case CardKind.MONEY | CardKind.LUCKY_NUMBA:
            effect = _money_taken(seat, spec.amount, f"card {spec.key}")
        case CardKind.MOVE:
            assert horse is not None
            state = _advance(state, horse, spec.steps, events)
        case CardKind.HORSE:
            state = _advance(state, spec.horse, spec.steps, events)
        case CardKind.STEAL:
            assert target is not None
            if spec.amount == 0:
                effect = StealStarted(seat=seat, victim=target)
            else:
                amount = min(spec.amount, state.money[target])
                effect = MoneyStolen(
                    seat=seat,
                    victim=target,
                    amount=amount,
                    transfers=(
                        _transfer(
                            seat_account(target),
                            seat_account(seat),
                            amount,
                            f"long_shot card {spec.key}",
                        ),
                    ),
                )
        case CardKind.BET:
            assert horse is not None
            effect = _bet(seat, horse, spec.amount, spec.free)
        case CardKind.WINNERS_CIRCLE:
            if spec.amount > 0:
                effect = _money_taken(seat, spec.amount, f"card {spec.key}")
            if spec.steps != 0:
                assert horse is not None
                if effect is not None:
                    events.append(effect)
                    state = evolve(state, effect)
                    effect = None
                state = _advance(state, horse, spec.steps, events)
        case _:
            assert_never(spec.kind)
    if effect is not None:
        events.append(effect)
        state = evolve(state, effect)
    return (*events, *_end_action(state, seat))


# --- evolve -----------------------------------------------------------------------------


def evolve(state: LongShotState, event: AnyEvent) -> LongShotState:
    """Apply one recorded event. No checks, no randomness: the log is the truth."""
    match event:
        case GameStarted(players=players, transfers=transfers):
            d = _d()
            return replace(
                state,
                phase=Phase.SETUP,
                players=players,
                money=_apply_transfers((0,) * players, transfers),
                hands=((),) * players,
                rerolls=(d.start_rerolls,) * players,
                positions=(0,) * len(d.horses),
                owners=(UNOWNED,) * len(d.horses),
                contenders=tuple(range(players)),
            )
        case ChanceResolved():
            return _apply_chance(state, event)
        case FeatureUsed(transfers=transfers) | MoneyTaken(transfers=transfers):
            return replace(state, money=_apply_transfers(state.money, transfers))
        case MoneyStolen(transfers=transfers):
            return replace(state, money=_apply_transfers(state.money, transfers))
        case RerollUsed(seat=seat, die=die):
            return replace(
                state,
                phase=Phase.ROLLING,
                rerolls=_put(state.rerolls, seat, state.rerolls[seat] - 1),
                horse_die=None if die is Die.HORSE else state.horse_die,
                move_die=None if die is Die.MOVE else state.move_die,
                move_rerolled=state.move_rerolled or die is Die.MOVE,
            )
        case HorseMoved(horse=horse, position=position):
            return replace(state, positions=_put(state.positions, horse - 1, position))
        case HorseFinished(horse=horse):
            return replace(state, finished=(*state.finished, horse))
        case ZeroRolled(seat=seat, victim=victim):
            if victim is None:
                return state
            return replace(state, steal=Steal(seat=seat, victim=victim))
        case RollResolved():
            return replace(state, phase=Phase.ACTING)
        case CardDrawn(seat=seat):
            top, *rest = state.deck
            return replace(
                state,
                deck=tuple(rest),
                hands=_put(state.hands, seat, (*state.hands[seat], top)),
            )
        case CardPlayed(seat=seat, card=card):
            return replace(
                state,
                hands=_put(state.hands, seat, tuple(c for c in state.hands[seat] if c != card)),
                discard=(*state.discard, card),
            )
        case StealStarted(seat=seat, victim=victim):
            return replace(state, steal=Steal(seat=seat, victim=victim))
        case HorseBought(seat=seat, horse=horse, transfers=transfers):
            return replace(
                state,
                owners=_put(state.owners, horse - 1, seat),
                money=_apply_transfers(state.money, transfers),
            )
        case BetPlaced(seat=seat, horse=horse, amount=amount, transfers=transfers):
            return replace(
                state,
                bets=(*state.bets, Bet(seat=seat, horse=horse, amount=amount)),
                money=_apply_transfers(state.money, transfers),
            )
        case CardsDiscarded(seat=seat, cards=cards, transfers=transfers):
            return replace(
                state,
                hands=_put(
                    state.hands, seat, tuple(c for c in state.hands[seat] if c not in cards)
                ),
                discard=(*state.discard, *cards),
                money=_apply_transfers(state.money, transfers),
            )
        case Passed():
            return state
        case TurnEnded(next=nxt):
            return replace(
                state,
                phase=Phase.ROLLING,
                current=nxt,
                turn=state.turn + 1,
                horse_die=None,
                move_die=None,
                move_rerolled=False,
            )
        case RaceEnded(transfers=transfers):
            return replace(
                state,
                phase=Phase.FINISHED,
                money=_apply_transfers(state.money, transfers),
                discard=(*state.discard, *(c for hand in state.hands for c in hand)),
                hands=((),) * state.players,
                horse_die=None,
                move_die=None,
                steal=None,
            )
        case _:
            assert_never(event)


def _apply_chance(state: LongShotState, event: ChanceResolved) -> LongShotState:
    d = _d()
    purpose = event.purpose
    if purpose == SHUFFLE_DECK:
        deck = tuple(event.values)
        hands: list[tuple[int, ...]] = [() for _ in range(state.players)]
        dealt = 0
        for _ in range(d.start_cards):  # one card at a time, clockwise
            for seat in range(state.players):
                hands[seat] = (*hands[seat], deck[dealt])
                dealt += 1
        return replace(state, deck=deck[dealt:], hands=tuple(hands), shuffled=True)
    if purpose == ROLL_START:
        best = max(event.values)
        tied = tuple(s for s, v in zip(state.contenders, event.values, strict=True) if v == best)
        if len(tied) > 1:
            return replace(state, contenders=tied)
        return replace(state, contenders=(), current=tied[0], turn=1, phase=Phase.ROLLING)
    if purpose == ROLL_HORSE:
        horse = event.values[0]
        state = replace(state, horse_die=horse if running(state, horse) else None)
        return _rolled(state)
    if purpose == ROLL_MOVE:
        return _rolled(replace(state, move_die=d.move_faces[event.values[0] - 1]))
    if purpose == ROLL_STEAL:
        assert state.steal is not None
        thief, victim = state.steal.seat, state.steal.victim
        hand = state.hands[victim]
        taken = hand[event.values[0] - 1]
        robbed = _put(state.hands, victim, tuple(c for c in hand if c != taken))
        return replace(state, hands=_put(robbed, thief, (*robbed[thief], taken)), steal=None)
    raise ValueError(f"Long Shot has no chance named {purpose!r}")


def _rolled(state: LongShotState) -> LongShotState:
    done = state.horse_die is not None and state.move_die is not None
    return replace(state, phase=Phase.MOVING if done else Phase.ROLLING)


# --- chance -----------------------------------------------------------------------------


def chance(state: LongShotState) -> ChanceRequest | None:
    """The randomness needed before anyone can act: the deck shuffle, the first-player
    rolls (again among the tied), a pending random-card steal, then each turn's dice (the
    horse die again while it names a finished horse)."""
    d = _d()
    if state.phase is Phase.FINISHED or not state.players:
        return None
    if state.phase is Phase.SETUP:
        if not state.shuffled:
            return ChanceRequest(SHUFFLE_DECK, ChanceKind.SHUFFLE, len(d.cards))
        return ChanceRequest(ROLL_START, ChanceKind.ROLL, len(state.contenders), d.horse_die_sides)
    if state.steal is not None:
        return ChanceRequest(ROLL_STEAL, ChanceKind.ROLL, 1, len(state.hands[state.steal.victim]))
    if state.phase is Phase.ROLLING:
        if state.horse_die is None:
            return ChanceRequest(ROLL_HORSE, ChanceKind.ROLL, 1, d.horse_die_sides)
        if state.move_die is None:
            return ChanceRequest(ROLL_MOVE, ChanceKind.ROLL, 1, len(d.move_faces))
    return None


# --- what a seat may do and see ---------------------------------------------------------


def legal_commands(state: LongShotState, seat: Seat) -> tuple[Command, ...]:
    if (
        state.phase not in (Phase.MOVING, Phase.ACTING)
        or seat != state.current
        or chance(state) is not None
    ):
        return ()
    if state.phase is Phase.MOVING:
        return _moving_commands(state, seat)
    return _acting_commands(state, seat)


def _moving_commands(state: LongShotState, seat: Seat) -> tuple[Command, ...]:
    commands: list[Command] = []
    if state.rerolls[seat] > 0:
        commands.extend(Reroll(seat=seat, die=die) for die in Die)
    if state.move_die == 0:
        commands.append(MoveHorses(seat=seat, horses=()))
        return tuple(commands)
    eligible = bar_horses(state, seat)
    spaces = state.move_die or 0
    length = _d().track_length
    for size in range(len(eligible) + 1):
        for subset in combinations(eligible, size):
            finishing = [h for h in subset if state.positions[h - 1] + spaces >= length]
            if len(finishing) < 2:
                commands.append(MoveHorses(seat=seat, horses=subset))
                continue
            # Who crosses the line first is the player's choice: offer every order.
            rest = tuple(h for h in subset if h not in finishing)
            for order in permutations(finishing):
                commands.append(MoveHorses(seat=seat, horses=(*rest, *order)))
    return tuple(commands)


def _acting_commands(state: LongShotState, seat: Seat) -> tuple[Command, ...]:
    d = _d()
    commands: list[Command] = [PassTurn(seat=seat)]
    horses = range(1, len(d.horses) + 1)
    for horse in horses:
        if (
            state.owners[horse - 1] == UNOWNED
            and running(state, horse)
            and d.horse(horse).price <= state.money[seat]
        ):
            commands.append(BuyHorse(seat=seat, horse=horse))
    for horse in horses:
        if _bet_problem(state, seat, horse, d.bet_amount, free=False, anywhere=False) is None:
            commands.append(PlaceBet(seat=seat, horse=horse))
    # Cards of one type are interchangeable: offer each type once, by its first card.
    first_of_type: dict[int, int] = {}
    for card in sorted(state.hands[seat]):
        first_of_type.setdefault(d.cards[card], card)
    cards = sorted(first_of_type.values())
    for card in cards:
        spec = d.card(card)
        for horse_choice, target in _card_choices(state, seat, spec):
            if card_problem(state, seat, spec, horse_choice, target) is None:
                commands.append(PlayCard(seat=seat, card=card, horse=horse_choice, target=target))
    # Again one discard per combination of card types, made of the first cards of each.
    by_type: dict[int, list[int]] = {}
    for card in sorted(state.hands[seat]):
        by_type.setdefault(d.cards[card], []).append(card)
    for types in combinations_with_replacement(sorted(by_type), d.discard_cards):
        wanted = Counter(types)
        if all(len(by_type[t]) >= n for t, n in wanted.items()):
            combo = sorted(c for t, n in wanted.items() for c in by_type[t][:n])
            commands.append(DiscardCards(seat=seat, cards=tuple(combo)))
    return tuple(commands)


def _card_choices(
    state: LongShotState, seat: Seat, spec: CardSpec
) -> Iterable[tuple[int | None, int | None]]:
    if spec.kind is CardKind.STEAL:
        return ((None, s) for s in range(state.players) if s != seat)
    if spec.kind in (CardKind.MOVE, CardKind.BET) or (
        spec.kind is CardKind.WINNERS_CIRCLE and spec.steps != 0
    ):
        return ((h, None) for h in range(1, len(_d().horses) + 1))
    return ((None, None),)


def card_view(card: int) -> CardView:
    spec = _d().card(card)
    return CardView(
        card=card,
        kind=spec.kind,
        title=spec.title,
        amount=spec.amount,
        steps=spec.steps,
        horse=spec.horse,
        number=spec.number,
        free=spec.free,
        anywhere=spec.anywhere,
    )


def view(state: LongShotState, seat: Seat | None) -> LongShotView:
    """The whole table for everyone; cards only in their owner's own view, as counts for
    the others; the deck as its size."""
    d = _d()
    places = {h: i for i, h in enumerate(state.finished, 1)}
    own = state.hands[seat] if seat is not None and 0 <= seat < state.players else ()
    return LongShotView(
        seat=seat,
        phase=state.phase,
        players=state.players,
        turn=state.turn,
        current=state.current
        if state.phase in (Phase.ROLLING, Phase.MOVING, Phase.ACTING)
        else None,
        money=state.money,
        hand=tuple(card_view(c) for c in own),
        hand_sizes=tuple(len(h) for h in state.hands),
        rerolls=state.rerolls,
        horses=tuple(
            HorseView(
                number=spec.number,
                name=spec.name,
                price=spec.price,
                move_bar=spec.move_bar,
                win=spec.win,
                place=spec.place,
                show=spec.show,
                position=state.positions[spec.number - 1] if state.positions else 0,
                owner=(
                    None
                    if not state.owners or state.owners[spec.number - 1] == UNOWNED
                    else state.owners[spec.number - 1]
                ),
                finished=places.get(spec.number),
                no_bets=bool(state.positions) and in_no_bets(state, spec.number),
            )
            for spec in d.horses
        ),
        bets=tuple(BetView(seat=b.seat, horse=b.horse, amount=b.amount) for b in state.bets),
        finished=state.finished,
        horse_die=state.horse_die,
        move_die=state.move_die,
        deck_size=len(state.deck),
        discard_size=len(state.discard),
        discard_top=card_view(state.discard[-1]) if state.discard else None,
        track_length=d.track_length,
        no_bets_from=d.no_bets_from,
    )


def money(state: LongShotState) -> Mapping[Seat, int]:
    """Each seat's cash in hand (stakes are in escrow until the race ends)."""
    return dict(enumerate(state.money))


def outcome(state: LongShotState) -> Outcome:
    if state.phase is not Phase.FINISHED:
        return Outcome(finished=False, scores=state.money)
    return Outcome(
        finished=True,
        ranking=ranking(state.money),
        scores=state.money,
        reason="most money once the third horse has crossed the line; ties shared",
    )
