"""The theory line of the emergence figure (Fig. 1A): the minimal naming game's success rate per
population round, drawn beside recorded runs. The theory family (agentsim.games.theory) builds
on this one, so this one cannot import it: the theory family registers its curve here instead,
and the figure goes without the line when no family did."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_SUCCESS_CURVE: list[Callable[..., Any]] = []


def register_success_curve(function: Callable[..., Any]) -> None:
    """Make `function` (keywords among n_agents/agents, rounds/population_rounds, pool_size, runs,
    seed; returns the success rate per round) the theory line of Fig. 1A."""
    _SUCCESS_CURVE[:] = [function]


def success_curve() -> Callable[..., Any] | None:
    return _SUCCESS_CURVE[0] if _SUCCESS_CURVE else None
