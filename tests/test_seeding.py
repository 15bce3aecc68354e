"""Seeds derived from the run's seed: the fast continuation agents use must give exactly the
seeds `derive_seed` gives, or cache keys and recorded runs would change."""

from __future__ import annotations

import random

from agentsim.seeding import continue_seed, derive_seed, seed_state


def test_continued_seeds_are_derive_seed() -> None:
    rng = random.Random(7)
    for _ in range(2_000):
        base, encounters, calls = rng.getrandbits(64), rng.randrange(1 << 40), rng.randrange(8)
        assert continue_seed(seed_state(base), encounters, calls) == derive_seed(base, encounters, calls)


def test_seeds_differ_by_every_part() -> None:
    seeds = {derive_seed(1, encounters, calls) for encounters in range(100) for calls in range(3)}
    assert len(seeds) == 300
    assert all(0 <= seed < 1 << 63 for seed in seeds)
