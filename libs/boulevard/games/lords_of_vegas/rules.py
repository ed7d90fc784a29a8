"""The rules of Lords of Vegas as a decider: decide / evolve / chance / legal_commands / view /
outcome. Pure: no I/O, no clock, no randomness (rolls and the shuffle arrive as
`ChanceResolved` events). Rulings on what the rulebook leaves open are in
docs/games/lords-of-vegas.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import assert_never

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
from boulevard.games.lords_of_vegas.board import (
    BET_MAX_PER_TILE,
    DICE_PER_PLAYER,
    END_CARD,
    GAMBLE_LOSE,
    GAMBLE_WIN_1X,
    GAMBLE_WIN_2X,
    INSTANT_WIN_POINTS,
    LOT_IDS,
    LOT_INDEX,
    LOTS,
    MARKERS_PER_PLAYER,
    REMODEL_COST_PER_TILE,
    TILES_PER_COLOUR,
    TWO_PLAYER_EXCLUDED_BLOCK,
    advance_on_track,
)
from boulevard.games.lords_of_vegas.types import (
    EMPTY_SPACE,
    AcceptTrade,
    ActionKind,
    AssignReorganizedDice,
    BuildCasino,
    CardDrawn,
    CasinoBuilt,
    CasinoPaid,
    CasinoRemodelled,
    CasinoReorganized,
    CasinoSprawled,
    Colour,
    Command,
    DealStartingCards,
    DecideLayOff,
    DrawCard,
    EndTurn,
    Event,
    Gamble,
    GambleOffered,
    GambleSettled,
    GameStarted,
    LayOffDecided,
    PendingGamble,
    PendingReorganization,
    Phase,
    PlayAction,
    ProposeTrade,
    RejectTrade,
    RemodelCasino,
    ReorganizeCasino,
    ReorganizedDiceAssigned,
    SettleGamble,
    Space,
    SprawlCasino,
    StartingCardsDealt,
    State,
    Takeover,
    TradeAccepted,
    TradeOffer,
    TradeProposed,
    TradeRejected,
    TurnEnded,
)

DECK_PURPOSE = "deck"
START_PURPOSE = "start_player"
REORGANIZE_PURPOSE = "reorganize"
GAMBLE_PURPOSE = "gamble"
TIE_PURPOSE = "tie_reroll"
STRIP = "strip"

# Trades `legal_commands` offers the current player per turn; decide accepts any number.
OFFERED_TRADES_PER_TURN = 2


def _fail(code: str, message: str) -> RulesError:
    return RulesError(code, message)


# ---------------------------------------------------------------------------------------------
# Board geometry: casinos, bosses, counts


@dataclass(frozen=True, slots=True)
class Casino:
    """A group of edge-connected same-colour tiles (lot indexes in board order)."""

    colour: Colour
    lots: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.lots)


# A memo of board analyses by the identity of the (immutable) spaces tuple: legal_commands,
# chance and decide ask about the same board many times. Results are identical without it.
_MEMO: dict[int, tuple[tuple[Space, ...], tuple[Casino, ...], Casino | None]] = {}
_MEMO_SIZE = 32


def _analysed(
    spaces: tuple[Space, ...],
) -> tuple[tuple[Space, ...], tuple[Casino, ...], Casino | None]:
    entry = _MEMO.get(id(spaces))
    if entry is not None and entry[0] is spaces:
        return entry
    found = _find_casinos(spaces)
    tied = next((c for c in found if len(top_dice(spaces, c)[1]) > 1), None)
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.clear()
    entry = (spaces, found, tied)
    _MEMO[id(spaces)] = entry
    return entry


def casinos(spaces: Sequence[Space]) -> tuple[Casino, ...]:
    """Every casino on the board, in board order of its first lot."""
    if isinstance(spaces, tuple):
        return _analysed(spaces)[1]
    return _find_casinos(spaces)


def _find_casinos(spaces: Sequence[Space]) -> tuple[Casino, ...]:
    seen = [False] * len(spaces)
    found: list[Casino] = []
    for start, space in enumerate(spaces):
        colour = space.tile
        if colour is None or seen[start]:
            continue
        seen[start] = True
        group = [start]
        frontier = [start]
        while frontier:
            i = frontier.pop()
            for n in LOTS[i].neighbours:
                if not seen[n] and spaces[n].tile == colour:
                    seen[n] = True
                    group.append(n)
                    frontier.append(n)
        found.append(Casino(colour, tuple(sorted(group))))
    return tuple(found)


def casino_at(spaces: Sequence[Space], index: int) -> Casino:
    for casino in casinos(spaces):
        if index in casino.lots:
            return casino
    raise _fail("no_casino", f"{LOT_IDS[index]} holds no casino tile")


def top_dice(spaces: Sequence[Space], casino: Casino) -> tuple[int, frozenset[int]]:
    """The largest die value in the casino and the seats holding a die of that value."""
    best = 0
    owners: set[int] = set()
    for i in casino.lots:
        s = spaces[i]
        if s.owner is None:
            continue
        if s.die > best:
            best, owners = s.die, {s.owner}
        elif s.die == best:
            owners.add(s.owner)
    return best, frozenset(owners)


def boss_of(spaces: Sequence[Space], casino: Casino) -> int | None:
    """The single boss, or None (no dice, or a tie for largest between players)."""
    _, owners = top_dice(spaces, casino)
    if len(owners) == 1:
        return next(iter(owners))
    return None


def tied_casino(spaces: Sequence[Space]) -> Casino | None:
    """The first casino where different players tie for the largest die (needs a reroll)."""
    if isinstance(spaces, tuple):
        return _analysed(spaces)[2]
    for casino in casinos(spaces):
        _, owners = top_dice(spaces, casino)
        if len(owners) > 1:
            return casino
    return None


def tiles_on_board(spaces: Sequence[Space], colour: Colour) -> int:
    return sum(1 for s in spaces if s.tile == colour)


def tiles_available(spaces: Sequence[Space], colour: Colour) -> int:
    return TILES_PER_COLOUR - tiles_on_board(spaces, colour)


def dice_on_board(spaces: Sequence[Space], seat: Seat) -> int:
    return sum(1 for s in spaces if s.owner == seat)


def markers_on_board(spaces: Sequence[Space], seat: Seat) -> int:
    return sum(1 for s in spaces if s.marker == seat)


def free_dice(state: State, seat: Seat) -> int:
    return DICE_PER_PLAYER - dice_on_board(state.spaces, seat)


def free_markers(state: State, seat: Seat) -> int:
    return MARKERS_PER_PLAYER - markers_on_board(state.spaces, seat)


def remaining_cards_by_colour(state: State) -> dict[str, int]:
    """Public information: how many cards of each payer are still to come (incl. the End)."""
    left: dict[str, int] = {c.value: 0 for c in Colour}
    left[STRIP] = 0
    for lot in LOTS:
        left[lot.card_colour] += 1
    left[STRIP] += 1  # the End of Game card pays The Strip
    for card in state.discards:
        left[_card_pays(card)] -= 1
    return left


def _card_pays(card: str) -> str:
    return STRIP if card == END_CARD else LOTS[LOT_INDEX[card]].card_colour


def _excluded(state: State, index: int) -> bool:
    return state.players == 2 and LOTS[index].block == TWO_PLAYER_EXCLUDED_BLOCK


def _index(lot_id: str) -> int:
    try:
        return LOT_INDEX[lot_id]
    except KeyError:
        raise _fail("unknown_lot", f"there is no lot {lot_id!r}") from None


# ---------------------------------------------------------------------------------------------
# Money


_ACCOUNT_SEAT = {seat_account(s): s for s in range(8)}


def _apply_transfers(cash: tuple[int, ...], transfers: Iterable[Transfer]) -> tuple[int, ...]:
    balances = list(cash)
    for t in transfers:
        src = _ACCOUNT_SEAT.get(t.source)
        dst = _ACCOUNT_SEAT.get(t.target)
        if src is not None:
            balances[src] -= t.amount
        if dst is not None:
            balances[dst] += t.amount
    return tuple(balances)


def _pay(source: str, target: str, amount: int, reason: str) -> tuple[Transfer, ...]:
    return (Transfer(source, target, amount, reason),) if amount > 0 else ()


def gamble_settlement(
    bet: int, roll: int, lay_off: bool, boss_cash: int
) -> tuple[tuple[str, str, int], ...]:
    """The field bet's money, as (payer, payee, amount) with parties "gambler", "boss" and
    "bank". 3, 4, 9, 10, 11 win the bet; 2 and 12 win twice the bet; 5-8 lose it. With a
    lay-off the boss pays (or receives) half, rounded down, and the bank the rest. A boss
    who cannot cover their part pays what they have."""
    moves: list[tuple[str, str, int]] = []
    if roll in GAMBLE_LOSE:
        boss_part = bet // 2 if lay_off else bet
        moves.append(("gambler", "boss", boss_part))
        moves.append(("gambler", "bank", bet - boss_part))
    else:
        if roll in GAMBLE_WIN_2X:
            prize = 2 * bet
        elif roll in GAMBLE_WIN_1X:
            prize = bet
        else:
            raise ValueError(f"{roll} is not a 2d6 total")
        boss_part = prize // 2 if lay_off else prize
        moves.append(("boss", "gambler", min(boss_part, boss_cash)))
        moves.append(("bank", "gambler", prize - boss_part))
    return tuple(m for m in moves if m[2] > 0)


# ---------------------------------------------------------------------------------------------
# Setup


def initial_state() -> State:
    return State()


def new_game(config: GameConfig) -> Sequence[Event]:
    if not 2 <= config.players <= 4:
        raise _fail("bad_players", "Lords of Vegas is for 2 to 4 players")
    return (GameStarted(players=config.players, banker=0),)


def _deal(state: State) -> StartingCardsDealt:
    deck = list(state.deck)
    hands: list[list[str]] = [[] for _ in range(state.players)]
    set_aside: list[str] = []
    for _round in range(2):
        for seat in range(state.players):
            while True:
                card = deck.pop(0)
                if _excluded(state, LOT_INDEX[card]):
                    set_aside.append(card)  # 2 players: F cards are redrawn (FAQ)
                    continue
                hands[seat].append(card)
                break
    # Four roughly equal stacks (the first `left % 4` one card larger); the End of Game card
    # goes on top of the fourth, and the other three on top of it.
    left = len(deck)
    stack, extra = divmod(left, 4)
    end_at = 3 * stack + min(extra, 3)
    transfers = tuple(
        Transfer(
            BANK,
            seat_account(seat),
            sum(LOTS[LOT_INDEX[c]].setup_money for c in hand),
            "starting money " + "+".join(hand),
        )
        for seat, hand in enumerate(hands)
    )
    return StartingCardsDealt(
        hands=tuple(tuple(h) for h in hands),
        set_aside=tuple(set_aside),
        end_card_position=end_at,
        transfers=transfers,
    )


# ---------------------------------------------------------------------------------------------
# The draw step


def _die_to_move(spaces: Sequence[Space], seat: Seat) -> int:
    """When a take-over needs a die and all are placed: the seat's lowest die (first lot)."""
    mine = [i for i, s in enumerate(spaces) if s.owner == seat]
    return min(mine, key=lambda i: (spaces[i].die, i))


def _apply_takeover(spaces: list[Space], ev: CardDrawn) -> None:
    if ev.card == END_CARD:
        return
    i = LOT_INDEX[ev.card]
    if ev.takeover is Takeover.MARKER_PLACED:
        spaces[i] = replace(spaces[i], marker=ev.seat)
    elif ev.takeover in (Takeover.DIE_REPLACED, Takeover.DIE_PLACED):
        if ev.die_moved_from is not None:
            j = LOT_INDEX[ev.die_moved_from]
            spaces[j] = replace(spaces[j], owner=None, die=0)
        spaces[i] = replace(spaces[i], owner=ev.seat, die=ev.die_value)


def _draw_event(state: State, seat: Seat, card: str) -> CardDrawn:
    pays = _card_pays(card)
    die_value = 0
    moved: str | None = None
    if card == END_CARD:
        takeover = Takeover.NO_LOT
    else:
        i = LOT_INDEX[card]
        space = state.spaces[i]
        if _excluded(state, i):
            takeover = Takeover.F_BLOCK_SKIPPED
        elif space.tile is None:
            takeover = (
                Takeover.MARKER_PLACED if free_markers(state, seat) > 0 else Takeover.NO_MARKER_LEFT
            )
        elif space.owner == seat:
            takeover = Takeover.ALREADY_YOURS
        else:
            if space.owner is None:
                takeover, die_value = Takeover.DIE_PLACED, LOTS[i].die
            else:
                takeover, die_value = Takeover.DIE_REPLACED, space.die
            if free_dice(state, seat) == 0:
                moved = LOT_IDS[_die_to_move(state.spaces, seat)]
    draft = CardDrawn(seat, card, pays, takeover, die_value, moved)
    spaces = list(state.spaces)
    _apply_takeover(spaces, draft)

    transfers: list[Transfer] = []
    for s in range(state.players):
        income = sum(1 for sp in spaces if sp.marker == s)
        transfers.extend(_pay(BANK, seat_account(s), income, "owned lots"))

    payouts: list[CasinoPaid] = []
    money = [0] * state.players
    for casino in casinos(spaces):
        if pays == STRIP:
            if not any(LOTS[i].borders_strip for i in casino.lots):
                continue
        elif casino.colour != pays:
            continue
        casino_money = 0
        for i in casino.lots:
            owner = spaces[i].owner
            if owner is not None:
                money[owner] += spaces[i].die
                casino_money += spaces[i].die
        boss = boss_of(spaces, casino)
        payouts.append(
            CasinoPaid(
                lots=tuple(LOT_IDS[i] for i in casino.lots),
                colour=casino.colour,
                boss=boss,
                points=casino.size if boss is not None else 0,
                money=casino_money,
            )
        )
    for s in range(state.players):
        transfers.extend(_pay(BANK, seat_account(s), money[s], f"casinos pay ({pays})"))

    # Each casino's points are recorded separately, smallest casino first, through the
    # track's breaks (points that cannot reach the next space are lost).
    points = list(state.points)
    for s in range(state.players):
        for paid in sorted(p.points for p in payouts if p.boss == s):
            points[s] = advance_on_track(points[s], paid)
    game_over = card == END_CARD or max(points) >= INSTANT_WIN_POINTS
    return replace(
        draft,
        payouts=tuple(payouts),
        points=tuple(points),
        transfers=tuple(transfers),
        game_over=game_over,
    )


def _decide_draw(state: State, seat: Seat) -> list[Event]:
    events: list[Event] = []
    while True:
        ev = _draw_event(state, seat, state.deck[0])
        events.append(ev)
        state = evolve(state, ev)
        # 2 players: an F card pays and is discarded, then Step 1 repeats.
        if ev.game_over or ev.takeover is not Takeover.F_BLOCK_SKIPPED:
            return events


# ---------------------------------------------------------------------------------------------
# Validation helpers


def _pending_decision(state: State) -> str | None:
    if state.pending_trade is not None:
        return f"seat {state.pending_trade.recipient} must answer a trade offer first"
    if state.pending_gamble is not None:
        return "a gamble is under way"
    if state.pending_reorganization is not None:
        return "a reorganization is under way"
    return None


def _require_turn(state: State, seat: Seat, phase: Phase) -> None:
    if state.phase is Phase.OVER:
        raise _fail("game_over", "the game is over")
    if not 0 <= seat < state.players:
        raise _fail("bad_seat", f"there is no seat {seat}")
    pending = _pending_decision(state)
    if pending is not None:
        raise _fail("decision_pending", pending)
    if seat != state.current or state.phase not in (Phase.DRAW, Phase.PLAY):
        raise _fail("not_your_turn", "it is not your turn")
    if state.phase is not phase:
        if phase is Phase.PLAY:
            raise _fail("draw_first", "draw your card first (Step 1)")
        raise _fail("already_drawn", "you have already drawn this turn")


def _require_cash(state: State, seat: Seat, amount: int, what: str) -> None:
    if state.cash[seat] < amount:
        raise _fail("not_enough_money", f"{what} costs ${amount}; you have ${state.cash[seat]}")


def _colour_available(state: State, colour: Colour, needed: int = 1) -> None:
    if tiles_available(state.spaces, colour) < needed:
        raise _fail("no_tiles", f"not enough {colour} tiles left")


def _check_die_source(state: State, seat: Seat, die_from: str | None) -> None:
    if free_dice(state, seat) > 0:
        if die_from is not None:
            raise _fail("die_not_needed", "you still have dice off the board; don't move one")
        return
    if die_from is None:
        raise _fail("die_needed", "all your dice are on the board: name a tile to take one from")
    if state.spaces[_index(die_from)].owner != seat:
        raise _fail("not_your_die", f"you have no die on {die_from}")


def _boss_casino(state: State, seat: Seat, index: int) -> Casino:
    casino = casino_at(state.spaces, index)
    if boss_of(state.spaces, casino) != seat:
        raise _fail("not_boss", f"you are not the boss of the casino at {LOT_IDS[index]}")
    return casino


# ---------------------------------------------------------------------------------------------
# Actions (Step 2)


def _build(state: State, c: BuildCasino) -> list[Event]:
    i = _index(c.lot)
    space = state.spaces[i]
    if _excluded(state, i):
        raise _fail("f_block", "in a 2-player game nobody builds on the F block")
    if space.marker != c.seat or space.tile is not None:
        raise _fail("not_your_lot", f"you do not own the lot {c.lot}")
    _colour_available(state, c.colour)
    cost = LOTS[i].build_cost
    _require_cash(state, c.seat, cost, f"building on {c.lot}")
    _check_die_source(state, c.seat, c.die_from)
    return [
        CasinoBuilt(
            c.seat,
            c.lot,
            c.colour,
            LOTS[i].die,
            c.die_from,
            _pay(seat_account(c.seat), BANK, cost, f"build {c.lot}"),
        )
    ]


def _sprawl(state: State, c: SprawlCasino) -> list[Event]:
    i = _index(c.lot)
    space = state.spaces[i]
    if _excluded(state, i):
        raise _fail("f_block", "in a 2-player game nobody builds on the F block")
    if space != EMPTY_SPACE:
        raise _fail("lot_not_free", f"{c.lot} is not an empty, unowned lot")
    if not any(
        state.spaces[n].tile == c.colour
        and boss_of(state.spaces, casino_at(state.spaces, n)) == c.seat
        for n in LOTS[i].neighbours
    ):
        raise _fail("not_adjacent", f"no {c.colour} casino of yours borders {c.lot}")
    _colour_available(state, c.colour)
    cost = 2 * LOTS[i].build_cost
    _require_cash(state, c.seat, cost, f"sprawling onto {c.lot}")
    _check_die_source(state, c.seat, c.die_from)
    return [
        CasinoSprawled(
            c.seat,
            c.lot,
            c.colour,
            LOTS[i].die,
            c.die_from,
            _pay(seat_account(c.seat), BANK, cost, f"sprawl {c.lot}"),
        )
    ]


def _remodel(state: State, c: RemodelCasino) -> list[Event]:
    casino = _boss_casino(state, c.seat, _index(c.lot))
    if c.colour == casino.colour:
        raise _fail("same_colour", f"that casino is already {c.colour}")
    _colour_available(state, c.colour, casino.size)
    cost = REMODEL_COST_PER_TILE * casino.size
    _require_cash(state, c.seat, cost, "this remodel")
    return [
        CasinoRemodelled(
            c.seat,
            tuple(LOT_IDS[i] for i in casino.lots),
            casino.colour,
            c.colour,
            _pay(seat_account(c.seat), BANK, cost, f"remodel {c.lot} to {c.colour}"),
        )
    ]


def _reorganize(state: State, c: ReorganizeCasino) -> list[Event]:
    casino = casino_at(state.spaces, _index(c.lot))
    dice = [i for i in casino.lots if state.spaces[i].owner is not None]
    if not any(state.spaces[i].owner == c.seat for i in dice):
        raise _fail("no_die_here", "you need a die in a casino to reorganize it")
    if any(LOT_IDS[i] in state.reorganized for i in dice):
        raise _fail("already_reorganized", "a die of that casino was already rerolled this turn")
    cost = sum(state.spaces[i].die for i in dice)
    _require_cash(state, c.seat, cost, "this reorganization")
    return [
        CasinoReorganized(
            c.seat,
            tuple(LOT_IDS[i] for i in dice),
            _pay(seat_account(c.seat), BANK, cost, f"reorganize {c.lot}"),
        )
    ]


def _gamble(state: State, c: Gamble) -> list[Event]:
    if state.gambled:
        raise _fail("already_gambled", "you may gamble only once per turn")
    casino = casino_at(state.spaces, _index(c.lot))
    boss = boss_of(state.spaces, casino)
    if boss is None or boss == c.seat:
        raise _fail("not_other_boss", "gamble at a casino whose boss is another player")
    limit = BET_MAX_PER_TILE * casino.size
    if not 1 <= c.amount <= limit:
        raise _fail("bad_bet", f"bet between $1 and ${limit} at this casino")
    _require_cash(state, c.seat, c.amount, "this bet")
    return [GambleOffered(c.seat, boss, c.lot, c.amount)]


def _action_command(seat: Seat, action: PlayAction) -> Command:
    def colour() -> Colour:
        if action.colour is None:
            raise _fail("bad_action", f"a {action.kind} needs a colour")
        return action.colour

    match action.kind:
        case ActionKind.BUILD:
            return BuildCasino(seat, action.lot, colour(), action.die_from)
        case ActionKind.SPRAWL:
            return SprawlCasino(seat, action.lot, colour(), action.die_from)
        case ActionKind.REMODEL:
            return RemodelCasino(seat, action.lot, colour())
        case ActionKind.REORGANIZE:
            return ReorganizeCasino(seat, action.lot)
        case ActionKind.GAMBLE:
            return Gamble(seat, action.lot, action.amount)
        case _:
            assert_never(action.kind)


# ---------------------------------------------------------------------------------------------
# Trades


def _check_trade(state: State, offer: TradeOffer) -> tuple[Transfer, ...]:
    """Validate a trade against the current state; the money it moves."""
    p, r = offer.proposer, offer.recipient
    if not (0 <= r < state.players) or r == p:
        raise _fail("bad_partner", "trade with another player at the table")
    if not (
        offer.give_money
        or offer.give_lots
        or offer.give_dice
        or offer.take_money
        or offer.take_lots
        or offer.take_dice
        or offer.action
    ):
        raise _fail("empty_trade", "a trade must exchange something")
    for giver, taker, money, lots, dice in (
        (p, r, offer.give_money, offer.give_lots, offer.give_dice),
        (r, p, offer.take_money, offer.take_lots, offer.take_dice),
    ):
        if money < 0:
            raise _fail("bad_amount", "money in a trade cannot be negative")
        if state.cash[giver] < money:
            raise _fail("not_enough_money", f"seat {giver} has only ${state.cash[giver]}")
        if len(set(lots)) != len(lots) or len(set(dice)) != len(dice):
            raise _fail("duplicate_item", "each lot or die can be traded once")
        for lot_id in lots:
            s = state.spaces[_index(lot_id)]
            if s.marker != giver:
                raise _fail("not_owned", f"seat {giver} does not own the lot {lot_id}")
        for lot_id in dice:
            s = state.spaces[_index(lot_id)]
            if s.owner != giver:
                raise _fail("not_owned", f"seat {giver} has no die on {lot_id}")
        # Markers and dice are swapped one for one, so what the taker gives back frees theirs.
        back_lots = len(offer.take_lots if taker == r else offer.give_lots)
        back_dice = len(offer.take_dice if taker == r else offer.give_dice)
        if free_markers(state, taker) + back_lots < len(lots):
            raise _fail("no_marker", f"seat {taker} has no marker left to take a lot")
        if free_dice(state, taker) + back_dice < len(dice):
            raise _fail("no_die", f"seat {taker} has no die left to take a die")
    transfers = _pay(seat_account(p), seat_account(r), offer.give_money, "trade") + _pay(
        seat_account(r), seat_account(p), offer.take_money, "trade"
    )
    if offer.action is not None:
        if state.phase is not Phase.PLAY or state.current not in (p, r):
            raise _fail(
                "action_not_now",
                "only an action the current player performs now, in Step 2, can be traded",
            )
        after = evolve(state, TradeAccepted(offer, transfers))
        decide(_action_command(state.current, offer.action), after)
    return transfers


def _check_trade_timing(state: State, seat: Seat) -> None:
    if state.phase not in (Phase.DRAW, Phase.PLAY):
        raise _fail("no_trading_now", "trades happen once the game is under way")
    if not 0 <= seat < state.players:
        raise _fail("bad_seat", f"there is no seat {seat}")
    pending = _pending_decision(state)
    if pending is not None:
        raise _fail("decision_pending", pending)


# ---------------------------------------------------------------------------------------------
# decide


def decide(command: Command, state: State) -> Sequence[Event]:
    """The events a command causes; RulesError (with a code) if the rules refuse it."""
    if state.phase is Phase.OVER:
        raise _fail("game_over", "the game is over")
    if chance(state) is not None:
        raise _fail("waiting_for_chance", "waiting for dice or cards")
    match command:
        case DealStartingCards(seat=seat):
            if state.phase is not Phase.DEAL:
                raise _fail("already_dealt", "the starting cards are not to be dealt now")
            if seat != state.banker:
                raise _fail("not_banker", "the banker deals the starting cards")
            return [_deal(state)]
        case DrawCard(seat=seat):
            _require_turn(state, seat, Phase.DRAW)
            return _decide_draw(state, seat)
        case BuildCasino():
            _require_turn(state, command.seat, Phase.PLAY)
            return _build(state, command)
        case SprawlCasino():
            _require_turn(state, command.seat, Phase.PLAY)
            return _sprawl(state, command)
        case RemodelCasino():
            _require_turn(state, command.seat, Phase.PLAY)
            return _remodel(state, command)
        case ReorganizeCasino():
            _require_turn(state, command.seat, Phase.PLAY)
            return _reorganize(state, command)
        case AssignReorganizedDice(seat=seat, placements=placements):
            pending = state.pending_reorganization
            if pending is None or not pending.awaiting or pending.values is None:
                raise _fail("nothing_to_assign", "there are no rerolled dice to place")
            if seat != pending.awaiting[0]:
                raise _fail("not_your_dice", f"seat {pending.awaiting[0]} places dice now")
            mine = [k for k, o in enumerate(pending.owners) if o == seat]
            lots = sorted(pending.lots[k] for k in mine)
            rolled = sorted(pending.values[k] for k in mine)
            if (
                sorted(lot for lot, _ in placements) != lots
                or sorted(v for _, v in placements) != rolled
            ):
                raise _fail(
                    "bad_placement",
                    f"place your rolled values {rolled} on your tiles {lots}, one each",
                )
            return [ReorganizedDiceAssigned(seat, tuple(sorted(placements)))]
        case Gamble():
            _require_turn(state, command.seat, Phase.PLAY)
            return _gamble(state, command)
        case DecideLayOff(seat=seat, lay_off=lay_off):
            gamble = state.pending_gamble
            if gamble is None or gamble.lay_off is not None:
                raise _fail("no_bet", "there is no bet waiting for a lay-off decision")
            if seat != gamble.boss:
                raise _fail("not_boss", "only the boss taking the bet decides the lay-off")
            return [LayOffDecided(seat, lay_off)]
        case SettleGamble(seat=seat):
            gamble = state.pending_gamble
            if gamble is None or gamble.roll is None:
                raise _fail("no_roll", "there is no rolled bet to settle")
            if seat != gamble.seat:
                raise _fail("not_gambler", "the gambler settles the bet")
            total = sum(gamble.roll)
            who = {
                "gambler": seat_account(gamble.seat),
                "boss": seat_account(gamble.boss),
                "bank": BANK,
            }
            transfers = tuple(
                Transfer(who[src], who[dst], amount, f"gamble rolled {total}")
                for src, dst, amount in gamble_settlement(
                    gamble.amount, total, bool(gamble.lay_off), state.cash[gamble.boss]
                )
            )
            return [
                GambleSettled(
                    gamble.seat, gamble.boss, total, gamble.amount, bool(gamble.lay_off), transfers
                )
            ]
        case ProposeTrade(seat=seat, offer=offer):
            _check_trade_timing(state, seat)
            if offer.proposer != seat:
                raise _fail("not_your_offer", "propose trades in your own name")
            _check_trade(state, offer)
            return [TradeProposed(offer)]
        case AcceptTrade(seat=seat):
            pending_offer = state.pending_trade
            if pending_offer is None:
                raise _fail("no_offer", "there is no trade offer to accept")
            if seat != pending_offer.recipient:
                raise _fail("not_recipient", "only the player offered the trade answers it")
            transfers = _check_trade(state, pending_offer)
            accepted = TradeAccepted(pending_offer, transfers)
            events: list[Event] = [accepted]
            if pending_offer.action is not None:
                after = evolve(state, accepted)
                events.extend(decide(_action_command(state.current, pending_offer.action), after))
            return events
        case RejectTrade(seat=seat):
            pending_offer = state.pending_trade
            if pending_offer is None:
                raise _fail("no_offer", "there is no trade offer to reject")
            if seat != pending_offer.recipient:
                raise _fail("not_recipient", "only the player offered the trade answers it")
            return [TradeRejected(pending_offer)]
        case EndTurn(seat=seat):
            _require_turn(state, seat, Phase.PLAY)
            return [TurnEnded(seat, (seat + 1) % state.players)]
        case _:
            assert_never(command)


# ---------------------------------------------------------------------------------------------
# evolve


def _set(spaces: tuple[Space, ...], changes: Mapping[int, Space]) -> tuple[Space, ...]:
    out = list(spaces)
    for i, s in changes.items():
        out[i] = s
    return tuple(out)


def _place_tile(
    state: State, seat: Seat, lot_id: str, colour: Colour, die: int, die_from: str | None
) -> tuple[Space, ...]:
    changes: dict[int, Space] = {}
    if die_from is not None:
        j = LOT_INDEX[die_from]
        changes[j] = replace(state.spaces[j], owner=None, die=0)
    changes[LOT_INDEX[lot_id]] = Space(marker=None, tile=colour, owner=seat, die=die)
    return _set(state.spaces, changes)


def _evolve_chance(state: State, ev: ChanceResolved) -> State:
    match ev.purpose:
        case "deck":
            deck = tuple(LOT_IDS[v] for v in ev.values)
            return replace(state, deck=deck, cards_left=len(deck), phase=Phase.DEAL)
        case "start_player":
            sums = [ev.values[2 * k] + ev.values[2 * k + 1] for k in range(len(state.contenders))]
            best = max(sums)
            winners = tuple(
                s for s, total in zip(state.contenders, sums, strict=True) if total == best
            )
            if len(winners) == 1:
                return replace(state, contenders=(), current=winners[0], phase=Phase.DRAW)
            return replace(state, contenders=winners)
        case "reorganize":
            pending = state.pending_reorganization
            assert pending is not None
            values = ev.values
            awaiting: list[int] = []
            changes: dict[int, Space] = {}
            # Whoever has a single die, or equal values, has no choice to make.
            order = [(pending.seat + k) % state.players for k in range(state.players)]
            for owner in order:
                ks = [k for k, o in enumerate(pending.owners) if o == owner]
                if not ks:
                    continue
                if len({values[k] for k in ks}) > 1:
                    awaiting.append(owner)
                    continue
                for k in ks:
                    i = LOT_INDEX[pending.lots[k]]
                    changes[i] = replace(state.spaces[i], die=values[k])
            state = replace(state, spaces=_set(state.spaces, changes))
            return _reorganization_progress(
                state, replace(pending, values=values, awaiting=tuple(awaiting))
            )
        case "gamble":
            gamble = state.pending_gamble
            assert gamble is not None
            return replace(state, pending_gamble=replace(gamble, roll=ev.values))
        case "tie_reroll":
            casino = tied_casino(state.spaces)
            assert casino is not None
            best, _ = top_dice(state.spaces, casino)
            tied = [
                i
                for i in casino.lots
                if state.spaces[i].owner is not None and state.spaces[i].die == best
            ]
            changes = {
                i: replace(state.spaces[i], die=v) for i, v in zip(tied, ev.values, strict=True)
            }
            return replace(state, spaces=_set(state.spaces, changes))
        case _:
            raise ValueError(f"unknown chance purpose {ev.purpose!r}")


def _follow_moved_die(
    reorganized: frozenset[str], die_from: str | None, lot_id: str
) -> frozenset[str]:
    """`reorganized` names the lots whose dice were rerolled this turn; a die moved off such a
    lot carries the mark with it, since no die may be rerolled more than once in a turn."""
    if die_from is None or die_from not in reorganized:
        return reorganized
    return (reorganized - {die_from}) | {lot_id}


def _reorganization_progress(state: State, pending: PendingReorganization) -> State:
    if pending.awaiting:
        return replace(state, pending_reorganization=pending)
    return replace(
        state,
        pending_reorganization=None,
        reorganized=state.reorganized | frozenset(pending.lots),
    )


def evolve(state: State, event: Event | ChanceResolved) -> State:
    """Apply one recorded event. No checks, no randomness."""
    match event:
        case ChanceResolved():
            return _evolve_chance(state, event)
        case GameStarted(players=players, banker=banker):
            return State(
                players=players,
                phase=Phase.SHUFFLE,
                banker=banker,
                current=banker,
                spaces=(EMPTY_SPACE,) * len(LOTS),
                cash=(0,) * players,
                points=(0,) * players,
            )
        case StartingCardsDealt(hands=hands, set_aside=set_aside):
            dealt = sum(len(h) for h in hands) + len(set_aside)
            rest = state.deck[dealt:]
            at = event.end_card_position
            deck = (*rest[:at], END_CARD, *rest[at:])
            changes = {LOT_INDEX[c]: Space(marker=seat) for seat, h in enumerate(hands) for c in h}
            return replace(
                state,
                deck=deck,
                cards_left=len(deck),
                discards=state.discards + state.deck[:dealt],
                spaces=_set(state.spaces, changes),
                cash=_apply_transfers(state.cash, event.transfers),
                phase=Phase.START_ROLL,
                contenders=tuple(range(state.players)),
            )
        case CardDrawn():
            spaces = list(state.spaces)
            _apply_takeover(spaces, event)
            if event.game_over:
                phase = Phase.OVER
            elif event.takeover is Takeover.F_BLOCK_SKIPPED:
                phase = Phase.DRAW
            else:
                phase = Phase.PLAY
            return replace(
                state,
                deck=state.deck[1:],
                cards_left=state.cards_left - 1,
                discards=(*state.discards, event.card),
                spaces=tuple(spaces),
                cash=_apply_transfers(state.cash, event.transfers),
                points=event.points,
                phase=phase,
                end_reason=(
                    ("90_points" if max(event.points) >= INSTANT_WIN_POINTS else "end_card")
                    if event.game_over
                    else ""
                ),
            )
        case CasinoBuilt() | CasinoSprawled():
            return replace(
                state,
                spaces=_place_tile(
                    state, event.seat, event.lot, event.colour, event.die, event.die_from
                ),
                cash=_apply_transfers(state.cash, event.transfers),
                reorganized=_follow_moved_die(state.reorganized, event.die_from, event.lot),
            )
        case CasinoRemodelled(lots=lots, colour=colour):
            changes = {
                LOT_INDEX[lot_id]: replace(state.spaces[LOT_INDEX[lot_id]], tile=colour)
                for lot_id in lots
            }
            return replace(
                state,
                spaces=_set(state.spaces, changes),
                cash=_apply_transfers(state.cash, event.transfers),
            )
        case CasinoReorganized(seat=seat, lots=lots):
            owners = tuple(state.spaces[LOT_INDEX[lot_id]].owner or 0 for lot_id in lots)
            return replace(
                state,
                cash=_apply_transfers(state.cash, event.transfers),
                pending_reorganization=PendingReorganization(seat, lots, owners),
            )
        case ReorganizedDiceAssigned(placements=placements):
            pending = state.pending_reorganization
            assert pending is not None
            changes = {
                LOT_INDEX[lot_id]: replace(state.spaces[LOT_INDEX[lot_id]], die=value)
                for lot_id, value in placements
            }
            state = replace(state, spaces=_set(state.spaces, changes))
            return _reorganization_progress(state, replace(pending, awaiting=pending.awaiting[1:]))
        case GambleOffered(seat=seat, boss=boss, lot=lot_id, amount=amount):
            return replace(
                state, gambled=True, pending_gamble=PendingGamble(seat, boss, lot_id, amount)
            )
        case LayOffDecided(lay_off=lay_off):
            assert state.pending_gamble is not None
            return replace(state, pending_gamble=replace(state.pending_gamble, lay_off=lay_off))
        case GambleSettled():
            return replace(
                state,
                pending_gamble=None,
                cash=_apply_transfers(state.cash, event.transfers),
            )
        case TradeProposed(offer=offer):
            return replace(state, pending_trade=offer, trades_this_turn=state.trades_this_turn + 1)
        case TradeAccepted(offer=offer):
            changes = {}
            for _giver, taker, lots, dice in (
                (offer.proposer, offer.recipient, offer.give_lots, offer.give_dice),
                (offer.recipient, offer.proposer, offer.take_lots, offer.take_dice),
            ):
                for lot_id in lots:
                    i = LOT_INDEX[lot_id]
                    changes[i] = replace(state.spaces[i], marker=taker)
                for lot_id in dice:
                    i = LOT_INDEX[lot_id]
                    changes[i] = replace(state.spaces[i], owner=taker)
            return replace(
                state,
                spaces=_set(state.spaces, changes),
                cash=_apply_transfers(state.cash, event.transfers),
                pending_trade=None,
            )
        case TradeRejected():
            return replace(state, pending_trade=None)
        case TurnEnded(next_seat=next_seat):
            return replace(
                state,
                current=next_seat,
                phase=Phase.DRAW,
                gambled=False,
                reorganized=frozenset(),
                trades_this_turn=0,
            )
        case _:
            assert_never(event)


# ---------------------------------------------------------------------------------------------
# chance


def chance(state: State) -> ChanceRequest | None:
    """What randomness the game needs before anyone may act, if any."""
    phase = state.phase
    if phase is Phase.SHUFFLE:
        return ChanceRequest(DECK_PURPOSE, ChanceKind.SHUFFLE, len(LOTS)) if state.players else None
    if phase is Phase.START_ROLL:
        return ChanceRequest(START_PURPOSE, ChanceKind.ROLL, 2 * len(state.contenders))
    if phase is Phase.OVER or phase is Phase.DEAL:
        return None
    reorg = state.pending_reorganization
    if reorg is not None:
        if reorg.values is None:
            return ChanceRequest(REORGANIZE_PURPOSE, ChanceKind.ROLL, len(reorg.lots))
        return None
    gamble = state.pending_gamble
    if gamble is not None:
        if gamble.lay_off is not None and gamble.roll is None:
            return ChanceRequest(GAMBLE_PURPOSE, ChanceKind.ROLL, 2)
        return None
    # After every action: dice of different players tied for the largest value are rerolled.
    casino = tied_casino(state.spaces)
    if casino is not None:
        best, _ = top_dice(state.spaces, casino)
        count = sum(
            1
            for i in casino.lots
            if state.spaces[i].owner is not None and state.spaces[i].die == best
        )
        return ChanceRequest(TIE_PURPOSE, ChanceKind.ROLL, count)
    return None


# ---------------------------------------------------------------------------------------------
# legal_commands: what a seat may do now (a finite, representative subset; see the docs)


def _die_source(state: State, seat: Seat) -> str | None:
    if free_dice(state, seat) > 0:
        return None
    return LOT_IDS[_die_to_move(state.spaces, seat)]


def _play_commands(state: State, seat: Seat) -> list[Command]:
    spaces = state.spaces
    cash = state.cash[seat]
    out: list[Command] = []
    available = {c: tiles_available(spaces, c) for c in Colour}
    die_from = _die_source(state, seat)
    all_casinos = casinos(spaces)
    bosses = {cas.lots[0]: boss_of(spaces, cas) for cas in all_casinos}
    for i, space in enumerate(spaces):
        if space.marker == seat and not _excluded(state, i) and cash >= LOTS[i].build_cost:
            out.extend(
                BuildCasino(seat, LOT_IDS[i], c, die_from) for c in Colour if available[c] > 0
            )
    for cas in all_casinos:
        boss = bosses[cas.lots[0]]
        lot_id = LOT_IDS[cas.lots[0]]
        if boss == seat:
            if available[cas.colour] > 0:
                targets = sorted(
                    {n for i in cas.lots for n in LOTS[i].neighbours if spaces[n] == EMPTY_SPACE}
                )
                out.extend(
                    SprawlCasino(seat, LOT_IDS[n], cas.colour, die_from)
                    for n in targets
                    if not _excluded(state, n) and cash >= 2 * LOTS[n].build_cost
                )
            if cash >= REMODEL_COST_PER_TILE * cas.size:
                out.extend(
                    RemodelCasino(seat, lot_id, c)
                    for c in Colour
                    if c != cas.colour and available[c] >= cas.size
                )
        dice = [i for i in cas.lots if spaces[i].owner is not None]
        if (
            any(spaces[i].owner == seat for i in dice)
            and not any(LOT_IDS[i] in state.reorganized for i in dice)
            and cash >= sum(spaces[i].die for i in dice)
        ):
            out.append(ReorganizeCasino(seat, lot_id))
        if not state.gambled and boss is not None and boss != seat and cash >= 1:
            top = min(BET_MAX_PER_TILE * cas.size, cash)
            out.extend(Gamble(seat, lot_id, amount) for amount in sorted({1, top}))
    if state.trades_this_turn < OFFERED_TRADES_PER_TURN:
        out.extend(_offered_trades(state, seat, out))
    out.append(EndTurn(seat))
    return out


def _offered_trades(state: State, seat: Seat, actions: Sequence[Command]) -> list[Command]:
    """A few sample trades: sell a lot, buy a lot, sell a die, and buy money for an action."""
    spaces = state.spaces
    offers: list[TradeOffer] = []
    for other in range(state.players):
        if other == seat:
            continue
        my_lot = next((i for i, s in enumerate(spaces) if s.marker == seat), None)
        price = min(3, state.cash[other])
        if my_lot is not None and price > 0 and free_markers(state, other) > 0:
            offers.append(TradeOffer(seat, other, give_lots=(LOT_IDS[my_lot],), take_money=price))
        their_lot = next((i for i, s in enumerate(spaces) if s.marker == other), None)
        price = min(3, state.cash[seat])
        if their_lot is not None and price > 0 and free_markers(state, seat) > 0:
            offers.append(
                TradeOffer(seat, other, give_money=price, take_lots=(LOT_IDS[their_lot],))
            )
        my_die = next((i for i, s in enumerate(spaces) if s.owner == seat), None)
        if my_die is not None and state.cash[other] >= 1 and free_dice(state, other) > 0:
            offers.append(TradeOffer(seat, other, give_dice=(LOT_IDS[my_die],), take_money=1))
        if state.cash[other] >= 1 and not any(o.action for o in offers):
            reorg = next((a for a in actions if isinstance(a, ReorganizeCasino)), None)
            if reorg is not None and state.cash[seat] >= 1:
                action = PlayAction(ActionKind.REORGANIZE, reorg.lot)
                offers.append(TradeOffer(seat, other, take_money=1, action=action))
    # The plain offers are valid by construction (checked above); an action is dry-run.
    out: list[Command] = []
    for offer in offers:
        if offer.action is not None:
            try:
                _check_trade(state, offer)
            except RulesError:
                continue
        out.append(ProposeTrade(seat, offer))
    return out


def _placements(pending: PendingReorganization, seat: Seat) -> list[Command]:
    assert pending.values is not None
    mine = [k for k, o in enumerate(pending.owners) if o == seat]
    lots = sorted(pending.lots[k] for k in mine)
    values = [pending.values[k] for k in mine]
    seen: set[tuple[int, ...]] = set()
    out: list[Command] = []
    for perm in itertools.permutations(sorted(values)):
        if perm in seen:
            continue
        seen.add(perm)
        out.append(AssignReorganizedDice(seat, tuple(zip(lots, perm, strict=True))))
        if len(out) >= 6:
            break
    return out


def legal_commands(state: State, seat: Seat) -> Sequence[Command]:
    if state.phase is Phase.OVER or not 0 <= seat < state.players:
        return []
    if chance(state) is not None:
        return []
    if state.pending_trade is not None:
        if seat == state.pending_trade.recipient:
            return [AcceptTrade(seat), RejectTrade(seat)]
        return []
    gamble = state.pending_gamble
    if gamble is not None:
        if gamble.lay_off is None:
            return (
                [DecideLayOff(seat, True), DecideLayOff(seat, False)] if seat == gamble.boss else []
            )
        return [SettleGamble(seat)] if seat == gamble.seat else []
    reorg = state.pending_reorganization
    if reorg is not None:
        if reorg.awaiting and reorg.awaiting[0] == seat:
            return _placements(reorg, seat)
        return []
    if state.phase is Phase.DEAL:
        return [DealStartingCards(seat)] if seat == state.banker else []
    if seat != state.current:
        return []
    if state.phase is Phase.DRAW:
        return [DrawCard(seat)]
    if state.phase is Phase.PLAY:
        return _play_commands(state, seat)
    return []


# ---------------------------------------------------------------------------------------------
# view, outcome, money


def view(state: State, seat: Seat | None) -> State:
    """What a seat (or a spectator, None) sees: everything but the order of the deck."""
    return replace(state, deck=())


def outcome(state: State) -> Outcome:
    if state.phase is not Phase.OVER:
        return Outcome(finished=False, scores=state.points)
    keys = sorted({(state.points[s], state.cash[s]) for s in range(state.players)}, reverse=True)
    ranking = tuple(
        tuple(s for s in range(state.players) if (state.points[s], state.cash[s]) == key)
        for key in keys
    )
    return Outcome(finished=True, ranking=ranking, scores=state.points, reason=state.end_reason)


def money(state: State) -> Mapping[Seat, int]:
    return {seat: cash for seat, cash in enumerate(state.cash)}
