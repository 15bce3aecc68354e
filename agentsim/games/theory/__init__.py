"""Rule-agent baselines from the literature: the minimal (inventory) naming game, the binary game
with a committed minority, and best response with memory M; each as a Scenario for the engine and
as a fast numpy/ODE path for many runs or large populations."""

from typing import TYPE_CHECKING

from .. import Family, lazy_exports, register_family
from ..naming.reference import register_success_curve

if TYPE_CHECKING:
    from .best_response import BestResponseNamingGame, best_response, flip_shares, mean_field_critical_mass
    from .committed import consensus_times, mean_field_critical_fraction, rate_equations, reaches_consensus
    from .inventory import InventoryMetrics, MinimalNamingGame, MinimalNamingParams, speak
    from .minimal import (
        Convergence,
        Neighbourhoods,
        Trajectory,
        per_round,
        production_shares,
        round_boundaries,
        run_to_consensus,
        simulate,
        success_curve,
    )

__all__ = [
    "BestResponseNamingGame", "Convergence", "InventoryMetrics", "MinimalNamingGame", "MinimalNamingParams",
    "Neighbourhoods", "Trajectory",
    "best_response", "consensus_times", "flip_shares", "mean_field_critical_fraction", "mean_field_critical_mass",
    "per_round", "production_shares", "rate_equations", "reaches_consensus", "round_boundaries", "run_to_consensus",
    "simulate", "speak", "success_curve",
]

lazy_exports(__name__, {
    ".best_response": ("BestResponseNamingGame", "best_response", "flip_shares", "mean_field_critical_mass"),
    ".committed": ("consensus_times", "mean_field_critical_fraction", "rate_equations", "reaches_consensus"),
    ".inventory": ("InventoryMetrics", "MinimalNamingGame", "MinimalNamingParams", "speak"),
    ".minimal": ("Convergence", "Neighbourhoods", "Trajectory", "per_round", "production_shares", "round_boundaries",
                 "run_to_consensus", "simulate", "success_curve"),
})


register_success_curve(f"{__name__}.minimal:success_curve")  # the theory line of the naming game's Fig. 1A
register_family(Family(
    name="theory",
    summary="rule-agent baselines: the minimal naming game, committed minorities, best response with memory",
    scenario_names=("minimal_naming_game", "best_response_naming_game"),  # MinimalNamingGame.name, BestResponseNamingGame.name
    report_sections=(f"{__name__}.report",),
    checkpoint_classes=(f"{__name__}.inventory:InventoryMetrics",),
))
