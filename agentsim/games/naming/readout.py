"""What a naming-game run shows of itself (agentsim/parts.py): the live view's figures, Mesa's
model series and the run's summary, all read from its `ConventionMetrics`. Variants of the game
(a network, a theory baseline, SIGN) subclass it to add their own lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...figures import LiveFigures
from ...parts import Readout
from ...views import Chart, Mark, Series, Stat, Views, percent, shares_chart
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

    def views(self, model: PopulationModel[None], rounds: Mapping[int, Mapping[str, Any]]) -> Views:
        """Fig. 1 and Fig. 3 of the paper, over the whole run: each name's share of every
        round's choices, the success rate per round and, with a committed minority, the
        alternative's share among the non-committed agents' choices, the flip marked; each
        also as the mean across runs with its band. x is the population round, as
        `transcript --round` numbers it."""
        metrics: ConventionMetrics = model.metrics
        ordered = sorted(rounds.items())
        limit = model.scenario.max_rounds()
        charts = [shares_chart(productions(ordered), self.game.names,
                               note="committed agents' plays included" if metrics.committed else ""),
                  Chart(key="success", title="success rate per round", y_label="success", percent=True, y_min=0, y_max=1,
                        across="mean", series=(Series(name="success", points=tuple(
                            (float(round_), float(line["success_rate"])) for round_, line in ordered
                            if line.get("success_rate") is not None)),))]
        stats = [Stat(label="agreement", value=metrics.agreement, text=percent(metrics.agreement)),
                 Stat(label="success", value=metrics.success_rate, text=percent(metrics.success_rate)),
                 Stat(label="consensus round", value=None if metrics.consensus is None else metrics.consensus.round,
                      text="not yet" if metrics.consensus is None else f"{metrics.consensus.round} ({metrics.consensus.name})")]
        if metrics.alternative is not None:
            flip = metrics.flip
            charts.append(Chart(
                key="alternative", title=f"{metrics.alternative}'s share among the non-committed agents' choices",
                y_label="share", percent=True, y_min=0, y_max=1, across="mean",
                series=(Series(name=str(metrics.alternative), points=tuple(
                    (float(round_), float(line["alternative_share"])) for round_, line in ordered
                    if line.get("alternative_share") is not None)),),
                levels=(Mark(at=metrics.threshold, label=f"flip at {metrics.threshold:.0%} over the window"),),
                marks=() if flip is None else (Mark(at=float(flip.round), label=f"flip, round {flip.round}"),),
                note="per round, fallbacks left out"))
            share = metrics.alternative_share()
            stats += [Stat(label="flip round", value=None if flip is None else flip.round,
                           text="not yet" if flip is None else str(flip.round)),
                      Stat(label=f"{metrics.alternative} among the others", value=share, text=percent(share))]
        return Views(unit="round", done=model.rounds_done, total=limit or None, names=tuple(self.game.names),
                     state=self.state_words(model), charts=tuple(charts), stats=tuple(stats),
                     group=self.topology_words())

    def state_words(self, model: PopulationModel[None]) -> str:
        metrics: ConventionMetrics = model.metrics
        if metrics.flip is not None:
            return f"flipped to {metrics.alternative} at round {metrics.flip.round}"
        if metrics.consensus is not None:
            return f"consensus on {metrics.consensus.name} at round {metrics.consensus.round}"
        return ""

    def topology_words(self) -> str:
        """The graph the agents meet on, where it is not everyone with everyone."""
        topology = getattr(self.game.params, "topology", "complete")
        return "" if topology == "complete" else f"{topology} (degree {self.game.params.topology_degree})"

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



def productions(ordered: Sequence[tuple[int, Mapping[str, Any]]]) -> list[tuple[float, dict[str, int]]]:
    """Each round's choices by name, from the store's round lines (`RoundStats.as_dict`): a
    reply that named none (the key null) and fallbacks (counted apart) left out."""
    return [(float(round_), {str(name): int(count) for name, count in (line.get("productions") or {}).items()
                             if name not in (None, "null") and isinstance(count, int)})
            for round_, line in ordered]
