"""What a SIGN agent sees when asked, shared by the game and its stand-in rule."""

from __future__ import annotations

from typing import NamedTuple


class SignSituation(NamedTuple):
    """What an agent sees: the lexicon, its current proposal, its partners' last names, the
    population round and its own number. `shift_die` is the lose-shift die drawn for it before
    any await; the prompt does not show it. `schema`: the prompt demands the `@say {name: Ck}`
    schema (its template says so), so a reply must follow it."""

    options: tuple[str, ...]
    current: str
    memory: tuple[str, ...]
    round: int
    agent: int
    shift_die: float = 1.0
    schema: bool = False
