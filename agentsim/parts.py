"""The parts a game supplies beside its rules.

A scenario (agentsim/scenario.py) is the rules of a game: who meets whom, what each is shown,
what an outcome does. What else a game brings is a part of its own, an object the scenario
hands out from one hook, read only by what needs it (as Concordia assembles an entity from
components):

    codec           how its LLM agents are prompted and their replies read (agentsim/codec.py)
    standin_part()  how the built-in stand-in answers those prompts: its rules, and the
                    parameters they do not read (`StandInPart`)
    readout()       what a run shows of itself: the live view's figures, the page's views,
                    Mesa's model series, the summary kept per run (`Readout`)

So the LLM layer is handed rules, never a scenario (`llm.specs.build_backend(..., rules=...)`),
and the live view, the runner and Mesa's DataCollector ask the readout, never the rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .figures import LiveFigures
from .llm.standin import StandInRule
from .views import Views

if TYPE_CHECKING:
    from .model import PopulationModel

St = TypeVar("St")


@dataclass(frozen=True, kw_only=True)
class StandInPart:
    """How the built-in stand-in answers a game: `rules` (llm/standin.py: the first that
    recognises a request answers it; built from the scenario's `standin` settings) and
    `ignores`, the parameters no rule reads (payoffs, sampling): a run on the stand-in that
    changes them warns that they change nothing a language model would see."""

    rules: Sequence[StandInRule] = ()
    ignores: tuple[str, ...] = ()


class Readout(Generic[St]):
    """What a run shows of itself, read from its model (metrics, `model.state: St`, agents):
    subclass it beside the game and return it from `Scenario.readout`. The base shows nothing
    but Mesa's default series."""

    def live_figures(self, model: PopulationModel[St]) -> LiveFigures:
        """What the live view and the log lines show of the run now (agentsim/figures.py)."""
        return LiveFigures()

    def views(self, model: PopulationModel[St], rounds: Mapping[int, Mapping[str, Any]]) -> Views:
        """What `watch`'s page draws of the run (agentsim/views.py): the charts its paper plots,
        its figures, its progress in the game's own unit, from the model at a checkpoint and
        the store's `rounds` lines up to it (population round -> the line the metrics wrote).
        The base: its progress in rounds."""
        limit = model.scenario.max_rounds()
        return Views(unit="round", done=model.rounds_done, total=limit or None)

    def model_series(self, model: PopulationModel[St]) -> dict[str, float | str | None]:
        """The model-level series Mesa's DataCollector records after each step (one column
        each, fixed when the model is made: a column per name would miss the names that first
        appear later): by default the live view's success rate and its leading name and share
        (None where it shows none)."""
        shown = self.live_figures(model)
        leading = max(shown.shares.items(), key=lambda item: item[1], default=None)
        return {
            "success_rate": None if shown.success_rate is None else float(shown.success_rate),
            "leading_name": None if leading is None else leading[0],
            "leading_share": None if leading is None else float(leading[1]),
        }

    def run_summary(self, model: PopulationModel[St]) -> dict[str, Any]:
        """What summary.json and the store's `runs` table keep of the run, beside the runner's
        own figures (status, calls, usage)."""
        return {}
