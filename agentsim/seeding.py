"""Seeds derived from the run's seed without drawing from its generators.

A policy call's seed depends only on (run seed, agent, the agent's decision count, attempt),
never on the order in which concurrent calls happen to be issued. That keeps concurrent runs
reproducible and makes every call's cache key stable across reruns.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import TypeVar

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
    is a permutation's index in [0, n!) decoded as a Lehmer code (the last seven digits at once,
    from a table), which costs a third of `random.sample` for every prompt's options."""
    pool = list(items)
    size = len(pool)
    code = rng.randrange(math.factorial(size))
    ordering = []
    for base in range(size, _TABLED, -1):
        code, position = divmod(code, base)
        ordering.append(pool.pop(position))
    if pool:
        tails = _TAILS.get(len(pool)) or _tail_orders(len(pool))
        ordering.extend(map(pool.__getitem__, tails[code]))
    return tuple(ordering)


_TABLED = 7  # 7! = 5040 orders in the largest table
_TAILS: dict[int, list[tuple[int, ...]]] = {}


def _tail_orders(size: int) -> list[tuple[int, ...]]:
    """For a Lehmer code of `size` digits read as one number, the positions it picks (made
    on first use and kept)."""
    orders = []
    for code in range(math.factorial(size)):
        pool, order = list(range(size)), []
        for base in range(size, 0, -1):
            code, position = divmod(code, base)
            order.append(pool.pop(position))
        orders.append(tuple(order))
    _TAILS[size] = orders
    return orders
