"""A mixed population in SIGN (the appendix of Zhang and Woisetschläger 2026): 12 agents, half
of one model family and half of another, 100 rounds, the three conditions side by side. Each
run's summary splits agreement by model (`by_model`) and says whose early favourite name
became the convention (`winning_model`); `python -m agentsim.games.sign.report DIR` tabulates it.

The population is set by the `agent_policy` hook: agent i asks `model.backend_for(i)`, so a
population of two real backends (the backends issue's `--population`) needs no change here.
On the stand-in, the two families are two parameterisations of the SIGN stand-in rule,
labelled as two models: `stand-in:phi-like` (noisier, favours C1, weaker at the format) and
`stand-in:llama-like` (favours C7, better at the format).

    python -m agentsim examples/mixed_sign_models.py --out results/mixed_sign
"""

from __future__ import annotations

from typing import Any

from agentsim.games.sign import CONDITIONS, SignGame, SignReadout, SignStandIn, SignStandInSettings
from agentsim.llm.standin import NAME as STAND_IN
from agentsim.llm.standin import StandInModel
from agentsim.model import PopulationModel
from agentsim.policies import LLMPolicy
from agentsim.prompts import PromptTemplate

RUNS = 3

# Two stand-in "families": the SIGN stand-in rule with different biases and format skills.
FAMILIES: dict[str, SignStandInSettings] = {
    "phi-like": SignStandInSettings(bias_name="C1", bias=0.9, noise=0.2, free_none_rate=0.25, schema_error_rate=0.3),
    "llama-like": SignStandInSettings(bias_name="C7", bias=0.9, noise=0.1, free_none_rate=0.1, schema_error_rate=0.1),
}


class FamilyStandIn(StandInModel):
    """The stand-in under a family's label (the label is what the store and usage record)."""

    def __init__(self, family: str) -> None:
        templates = [PromptTemplate.load("sign", variant) for variant in ("schema", "nl_sw", "nl")]
        super().__init__([SignStandIn(templates, FAMILIES[family])])
        self.name = f"{STAND_IN}:{family}"


class MixedSignModels(SignGame):
    name = "mixed_sign_models"

    def agent_policy(self, model: PopulationModel, index: int) -> LLMPolicy:
        backend = model.backend_for(index)
        if backend.name == STAND_IN:  # no population given: two stand-in families, half each
            families = list(FAMILIES)
            backend = FamilyStandIn(families[index * len(families) // self.params.agents])
        return LLMPolicy(backend, self.params.sampling(), self.codec, max_reasks=self.retries(), grammar=self.grammar())

    def readout(self) -> MixedReadout:
        return MixedReadout(self)


class MixedReadout(SignReadout):
    """SIGN's summary, and on the stand-in which name each family favours."""

    def run_summary(self, model: PopulationModel[None]) -> dict[str, Any]:
        summary = super().run_summary(model)
        if any(label.startswith(f"{STAND_IN}:") for label in summary.get("by_model", {})):
            summary["standin_favourites"] = {f"{STAND_IN}:{family}": rule.bias_name for family, rule in FAMILIES.items()}
        return summary


scenario = MixedSignModels(agents=12, memory_length=5, alpha=0.75, max_rounds=100)

VARIANTS = [{"condition": condition} for condition in CONDITIONS]
