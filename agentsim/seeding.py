"""Seeds derived from the run's seed without drawing from its generators.

A policy call's seed depends only on (run seed, agent, the agent's decision count, attempt),
never on the order in which concurrent calls happen to be issued. That keeps concurrent runs
reproducible and makes every call's cache key stable across reruns.
"""

from __future__ import annotations

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
    state = ((state ^ (first & _MASK64)) * _STEP) & _MASK64
    value = ((((state ^ (second & _MASK64)) * _STEP) & _MASK64) + 0x9E3779B97F4A7C15) & _MASK64  # splitmix64, inlined:
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64  # one is derived for every decision
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (value ^ (value >> 31)) >> 1


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
