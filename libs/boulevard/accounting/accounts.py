"""Accounts: who can hold money, and which of them may go below zero.

An account is named within a *book*: each game is one book (its game id) holding the
`bank`, one `seat:<n>` per player and whatever escrow accounts the game names (wagers held
while a bet is resolved). The book `platform` is reserved for platform-wide accounts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from boulevard.accounting.errors import EntryRejected, ErrorCode

BANK = "bank"
SEAT_PREFIX = "seat:"
ESCROW_PREFIX = "escrow:"
PLATFORM_BOOK = "platform"

# Printable ASCII without spaces: names travel in JSON, NATS subjects and URLs unchanged.
_NAME = re.compile(r"[!-~]{1,200}")
_SEAT = re.compile(r"seat:(0|[1-9][0-9]{0,5})")


class AccountKind(StrEnum):
    BANK = "bank"  # the game's bank: pays out and takes in; may go below zero
    PLAYER = "player"  # one seat's money; never below zero
    ESCROW = "escrow"  # money held for a game purpose (wagers); never below zero
    PLATFORM = "platform"  # platform-wide (fees, promotions); never below zero


# The one place that says which accounts may be overdrawn.
MAY_GO_NEGATIVE: frozenset[AccountKind] = frozenset({AccountKind.BANK})


def seat_account(seat: int) -> str:
    """The account name of a seat (mirrors `boulevard.games.base.seat_account`)."""
    return f"{SEAT_PREFIX}{seat}"


@dataclass(frozen=True, slots=True, order=True)
class AccountId:
    """An account: `name` within `book` (a game id, or `platform`)."""

    book: str
    name: str

    def __post_init__(self) -> None:
        check_name("book", self.book)
        check_name("account", self.name)
        if self.name.startswith(SEAT_PREFIX) and not _SEAT.fullmatch(self.name):
            raise EntryRejected(
                ErrorCode.INVALID_ACCOUNT, f"seat account {self.name!r} is not seat:<n>"
            )

    @property
    def kind(self) -> AccountKind:
        return account_kind(self.book, self.name)

    def __str__(self) -> str:
        return f"{self.book}/{self.name}"


@lru_cache(maxsize=65_536)
def account_id(book: str, name: str) -> AccountId:
    """`AccountId(book, name)`, validated once per distinct account (a hot path: every
    posting names two accounts, and a game's few accounts recur in every entry)."""
    return AccountId(book, name)


def account_kind(book: str, name: str) -> AccountKind:
    """The kind of an account, from its book and name alone."""
    if book == PLATFORM_BOOK:
        return AccountKind.PLATFORM
    if name == BANK:
        return AccountKind.BANK
    if name.startswith(SEAT_PREFIX):
        return AccountKind.PLAYER
    # Any other name is an account the game defines for money held on the way (escrow).
    return AccountKind.ESCROW


def may_go_negative(account: AccountId) -> bool:
    return account.kind in MAY_GO_NEGATIVE


def seat_of(name: str) -> int | None:
    """The seat number of a `seat:<n>` account name, else None."""
    m = _SEAT.fullmatch(name)
    return int(m.group(1)) if m else None


def check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise EntryRejected(
            ErrorCode.INVALID_ACCOUNT,
            f"{what} name {value!r} must be 1-200 printable ASCII characters without spaces",
        )
    return value
