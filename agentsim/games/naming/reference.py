"""The theory line of the emergence figure (Fig. 1A): the minimal naming game's success rate per
population round, drawn beside recorded runs. The theory family (agentsim.games.theory) builds
on this one, so this one cannot import it: the theory family registers its curve here instead,
and the figure goes without the line when no family did."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

_SUCCESS_CURVE: list[Callable[..., Any] | str] = []


def register_success_curve(function: Callable[..., Any] | str) -> None:
    """Make `function` (keywords among n_agents/agents, rounds/population_rounds, pool_size, runs,
    seed; returns the success rate per round) the theory line of Fig. 1A; as "module:function",
    the module is imported when the figure is drawn (not when the family registers)."""
    _SUCCESS_CURVE[:] = [function]


def success_curve() -> Callable[..., Any] | None:
    if not _SUCCESS_CURVE:
        return None
    function = _SUCCESS_CURVE[0]
    if isinstance(function, str):
        module, _, name = function.partition(":")
        function = getattr(importlib.import_module(module), name)
        _SUCCESS_CURVE[:] = [function]
    return function
