"""Seeds derived from the run's seed without drawing from its generators.

A policy call's seed depends only on (run seed, agent, the agent's decision count, attempt),
never on the order in which concurrent calls happen to be issued. That keeps concurrent runs
reproducible and makes every call's cache key stable across reruns.
"""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

_MASK64 = (1 << 64) - 1


def _splitmix64(value: int) -> int:
    value = (value + 0x9E3779B97F4A7C15) & _MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)


_START = 0x6A09E667F3BCC908
_STEP = 0x9E3779B97F4A7C15


def seed_state(*parts: int) -> int:
    """The mixing state `derive_seed` reaches after `parts`, to continue with `continue_seed`."""
    state = _START
    for part in parts:
        state = ((state ^ (part & _MASK64)) * _STEP) & _MASK64
    return state


def derive_seed(*parts: int) -> int:
    """A 63-bit seed (fits every provider's signed 64-bit seed field) mixed from integers.
    Each part goes through an invertible xor-multiply step and the result through splitmix64,
    so tuples that differ give different seeds (up to 64-bit collisions)."""
    return _splitmix64(seed_state(*parts)) >> 1


def continue_seed(state: int, first: int, second: int) -> int:
    """`derive_seed(*parts, first, second)` for `state = seed_state(*parts)`: an agent's call
    seeds share their leading parts, and one is derived for every decision."""
    state = ((((state ^ (first & _MASK64)) * _STEP) & _MASK64 ^ (second & _MASK64)) * _STEP) & _MASK64
    state = (state + 0x9E3779B97F4A7C15) & _MASK64
    state = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    state = ((state ^ (state >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (state ^ (state >> 31)) >> 1


def unit_uniforms(seed: int, count: int) -> list[float]:
    """`count` floats in [0, 1) from a seed, 21 bits each (three per 64-bit draw): the
    stand-in's dice, cheap enough for a hot path and fine-grained enough for its rates."""
    values = []
    state = seed
    bits = available = 0
    for _ in range(count):
        if available < 21:
            state = bits = _splitmix64(state)
            available = 64
        values.append((bits & 0x1FFFFF) * (1.0 / 0x200000))
        bits >>= 21
        available -= 21
    return values


def shuffled(rng: random.Random, items: Sequence[T]) -> tuple[T, ...]:
    """A uniformly random ordering of `items` from one draw of the run's generator: the draw
    is a permutation's index in [0, n!) decoded as a Lehmer code. Decoding it digit by digit
    cost more than the rest of drawing an encounter, so a tuple of up to ten items (a name
    pool, shuffled for every prompt) is decoded with two table lookups instead."""
    orderings = _ORDERINGS.get(id(items))
    if orderings is None or orderings.items is not items:
        if not isinstance(items, tuple) or len(items) > _WHOLLY_TABLED:
            return _decoded(rng, items)
        if len(_ORDERINGS) >= 64:
            _ORDERINGS.clear()
        orderings = _ORDERINGS[id(items)] = _Orderings(items)
    if type(rng) is random.Random:
        # rng.randrange(count), without the two Python-level calls it goes through: the same
        # draws from the generator and the same result (CPython's `_randbelow_with_getrandbits`).
        count, bits, getrandbits = orderings.count, orderings.bits, rng.getrandbits
        code = getrandbits(bits)
        while code >= count:
            code = getrandbits(bits)
    else:
        code = rng.randrange(orderings.count)
    tail, head = divmod(code, len(orderings.heads))
    return orderings.heads[head] + orderings.tails[tail](orderings.rests[head])


_TABLED = 7  # the last seven Lehmer digits (7! = 5040 orders) are decoded by one table
_WHOLLY_TABLED = 10  # up to ten items, the leading digits too (at most 720 heads per tuple)


class _Orderings:
    """The orderings of one tuple: its leading Lehmer digits pick the first items and leave
    the rest in the order digit-by-digit decoding would; its last digits pick an order of the
    rest (an `itemgetter` per order, so picking is one C call)."""

    __slots__ = ("items", "count", "bits", "heads", "rests", "tails")

    def __init__(self, items: tuple[T, ...]) -> None:
        size = len(items)
        tail = min(size, _TABLED)
        self.items = items
        self.count = math.factorial(size)
        self.bits = self.count.bit_length()
        self.tails = _tail_pickers(tail)
        self.heads: list[tuple[T, ...]] = []
        self.rests: list[tuple[T, ...]] = []
        for code in range(self.count // math.factorial(tail)):
            pool = list(items)
            self.heads.append(tuple(_pick(pool, code, size - tail)[0]))
            self.rests.append(tuple(pool))


_ORDERINGS: dict[int, _Orderings] = {}  # by id; an entry holds its tuple, so ids are not reused


def _decoded(rng: random.Random, items: Sequence[T]) -> tuple[T, ...]:
    """`shuffled` for what has no table: the leading digits one by one, the last by table."""
    pool = list(items)
    ordering, code = _pick(pool, rng.randrange(math.factorial(len(pool))), max(0, len(pool) - _TABLED))
    return tuple(ordering) + _tail_pickers(len(pool))[code](pool)


def _pick(pool: list[T], code: int, digits: int) -> tuple[list[T], int]:
    """Decode the first `digits` Lehmer digits of `code`, taking the items they pick out of
    `pool`: those items in order, and the code of what is left."""
    picked = []
    for base in range(len(pool), len(pool) - digits, -1):
        code, position = divmod(code, base)
        picked.append(pool.pop(position))
    return picked, code


_TAILS: dict[int, list[Callable[[Sequence[Any]], tuple[Any, ...]]]] = {}


def _tail_pickers(size: int) -> list[Callable[[Sequence[Any]], tuple[Any, ...]]]:
    """For a Lehmer code of `size` digits read as one number, a function that picks the
    order it decodes to from a pool of `size` items (made on first use and kept)."""
    pickers = _TAILS.get(size)
    if pickers is not None:
        return pickers
    pickers = []
    for code in range(math.factorial(size)):
        order = _pick(list(range(size)), code, size)[0]
        # One item or none has one order, and itemgetter of one index returns no tuple.
        pickers.append(operator.itemgetter(*order) if size > 1 else tuple)
    _TAILS[size] = pickers
    return pickers
