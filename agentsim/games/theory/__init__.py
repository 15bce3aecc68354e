"""Rule-agent baselines from the literature: the minimal (inventory) naming game, the binary game
with a committed minority, and best response with memory M; each as a Scenario for the engine and
as a fast numpy/ODE path for many runs or large populations."""

from .. import Family, register_family
from ..naming.reference import register_success_curve
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


register_success_curve(success_curve)  # the theory line of the naming game's Fig. 1A
register_family(Family(
    name="theory",
    summary="rule-agent baselines: the minimal naming game, committed minorities, best response with memory",
    scenario_names=(MinimalNamingGame.name, BestResponseNamingGame.name),
    report_sections=(f"{__name__}.report",),
    checkpoint_classes=(InventoryMetrics,),
))
