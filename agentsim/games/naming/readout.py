"""What a naming-game run shows of itself (agentsim/parts.py): the live view's figures, Mesa's
model series and the run's summary, all read from its `ConventionMetrics`. Variants of the game
(a network, a theory baseline, SIGN) subclass it to add their own lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...figures import LiveFigures
from ...parts import Readout
from .metrics import ConventionMetrics

if TYPE_CHECKING:
    from ...model import PopulationModel
    from .game import NamingGame


class NamingReadout(Readout[None]):
    """A naming game's consensus, success, agreement and (with a committed minority) flip, for
    the game `game` (its name pool and majority name)."""

    def __init__(self, game: NamingGame) -> None:
        self.game = game

    def run_summary(self, model: PopulationModel[None]) -> dict[str, Any]:
        metrics: ConventionMetrics = model.metrics
        summary: dict[str, Any] = {
            "consensus": metrics.consensus is not None,
            "consensus_name": metrics.consensus.name if metrics.consensus else None,
            "consensus_round": metrics.consensus.round if metrics.consensus else None,
            "final_success_rate": round(metrics.success_rate, 4),
            "final_agreement": round(metrics.agreement, 4),
            "leading_name": metrics.leading_name(),
        }
        if metrics.alternative is not None:
            share = metrics.alternative_share()
            summary.update(
                committed=len(metrics.committed),
                committed_name=metrics.alternative,
                majority_name=self.game.majority_name(),
                flip=metrics.flip is not None,
                flip_round=metrics.flip.round if metrics.flip else None,
                final_alternative_share=None if share is None else round(share, 4),
                # the choices that share is taken over (the last window's non-committed ones)
                final_alternative_choices=metrics.uncommitted.total,
            )
        # Fallback moves played their part in the game but are in none of the figures above.
        summary["fallback_moves"] = metrics.fallbacks
        return summary

    def model_series(self, model: PopulationModel[None]) -> dict[str, float | str | None]:
        """Per step: success over the last window, agreement (the leading latest name's share
        among the non-committed agents), the leading name and its share of the last window's
        productions, and with a committed minority the alternative's share among the others'
        latest choices (None before any)."""
        metrics: ConventionMetrics = model.metrics
        leading = metrics.leading_name()
        series: dict[str, float | str | None] = {
            "success_rate": metrics.success_rate,
            "agreement": metrics.agreement,
            "leading_name": leading,
            "leading_share": metrics.window_shares().get(str(leading), 0.0) if leading is not None else 0.0,
        }
        if metrics.alternative is not None:
            series["alternative_share"] = metrics.alternative_share()
        return series

    def live_figures(self, model: PopulationModel[None]) -> LiveFigures:
        metrics: ConventionMetrics = model.metrics
        shares = metrics.window_shares()
        committed = bool(metrics.committed)
        lines = [("agreement", f"{metrics.agreement:.0%}" + (" (latest choices of the non-committed agents)" if committed else ""))]
        if metrics.consensus:
            lines.append(("consensus", f"on {metrics.consensus.name} at round {metrics.consensus.round}"))
        if metrics.alternative is not None:
            share = metrics.alternative_share()
            lines.append(("committed", f"{len(metrics.committed)} of {metrics.population} "
                                       f"({len(metrics.committed) / metrics.population:.0%}) play {metrics.alternative}"))
            lines.append(("flip", f"yes, at round {metrics.flip.round}" if metrics.flip else
                          "not yet (no choice of the others yet)" if share is None else
                          f"not yet ({metrics.alternative} at {share:.0%} of the others' "
                          f"{metrics.uncommitted.total} latest choices)"))
        fallbacks = f"; {metrics.fallbacks} fallbacks left out" if metrics.fallbacks else ""
        return LiveFigures(
            success_rate=metrics.success_rate,
            success_history=tuple(metrics.success_history[-60:]),
            shares={name: shares.get(name, 0.0) for name in self.game.names},
            shares_label="choices",
            shares_note=(f"last {len(metrics.window_productions)} choices, committed agents' plays included"
                         f"{fallbacks}" if committed else
                         f"share of the last {len(metrics.window_productions)} choices{fallbacks}"),
            lines=tuple(lines),
        )
