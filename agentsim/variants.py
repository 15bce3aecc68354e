"""Parameter variants: a grid of conditions run as one experiment.

A scenario file may declare `VARIANTS`, a list of dicts of parameter changes. Every variant
runs `--runs` seeded replicates into one output directory, each variant with the same seeds
(replicate k is variant k mod V at seed `seed + k // V`, so growing --runs appends runs), and
each run's summary names its variant. `--set` has the last word: it pins a parameter across
the grid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ParameterError
from .scenario import Scenario


def variant_scenario(scenario: Scenario[Any, Any, Any], variant: dict[str, Any], seed: int) -> Scenario[Any, Any, Any]:
    """The scenario of one variant, resolved for the experiment; an impossible variant is a
    ParameterError that names it."""
    try:
        return scenario.with_params(**variant).for_experiment(seed)
    except ParameterError as error:
        raise ParameterError(f"variant {variant}: {error}") from None


def pinned_variants(variants: Any, overrides: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """A scenario file's VARIANTS with the parameters `--set` pins removed, duplicates dropped:
    `--set condition=schema` keeps only that part of a grid, `--set agents=4` shrinks every
    variant. Nothing left to vary: no variants."""
    if variants is None:
        variants = ()
    if not isinstance(variants, (list, tuple)) or not all(
            isinstance(variant, dict) and all(isinstance(key, str) for key in variant) for variant in variants):
        raise ParameterError(f"VARIANTS must be a list of dicts of parameter changes, e.g. [{{'agents': 12}}, "
                             f"{{'agents': 24}}] (got {_short(variants)}); fix the scenario file")
    pinned: list[dict[str, Any]] = []
    for variant in variants:
        kept = {key: value for key, value in variant.items() if key not in overrides}
        if kept not in pinned:
            pinned.append(kept)
    return tuple(pinned) if any(pinned) else ()


def variant_cell(replicate: int, variants: int, seed: int) -> tuple[int, int]:
    """(variant index, seed) of replicate `replicate` among `variants` variants."""
    return replicate % variants, seed + replicate // variants


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
