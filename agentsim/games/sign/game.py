"""SIGN, schema-induced games for naming (Zhang and Woisetschläger 2026), as a naming game.

N agents, a lexicon of M names C1..CM. Every population round pairs the agents uniformly at
random; each agent proposes a name in a message and a decoder maps the message to a name (or
to none). Each agent carries two things between rounds:

- its current proposal (drawn uniformly from the lexicon at the start), shown in its prompt;
  it becomes whatever the agent actually said, and after a mismatch it becomes the partner's
  decoded name with probability `alpha` (the lose-shift rule, with dice drawn from the run's
  generator before any await);
- a partner-only memory: the names its last K partners said to it (decodable names only),
  oldest first.

The three conditions differ in what the model sees and must produce, which is the point of
the paper (its public code ran one hard-coded update rule for all three, so they could not
differ by construction):

    nl       free natural language; no memory in the prompt; the decoder reads the reply
    nl-sw    free natural language, with the sliding window of K partner names
    schema   the window, and the reply must be exactly `@say {name: Ck}`: a non-compliant
             reply is asked again once with the reminder "Follow EXACTLY one line:
             @say {name: Ck}"; still non-compliant, the free text is decoded (the retry's
             first, then the first reply's); undecodable, the agent says no name (or the
             `fallback`). With `constrained_decoding`, the schema is also sent to the server
             as a regex grammar (TGI grammar, vLLM guided decoding).

Every attempt is a CallRecord with its tokens; a reply decoded from free text keeps its
`error` (why it failed the schema) and carries the decoded name as its parsed action, so the
store says which step gave each name (`sign_schema.decision_route`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ...agents import PopulationAgent
from ...figures import LiveFigures
from ...llm.base import Grammar, Sampling
from ...model import PopulationModel
from ...params import require
from ...parts import Readout, StandInPart
from ...policies import LLMPolicy
from ...prompts import PromptTemplate
from ...records import Decision, EncounterRecord, Move
from ...scheduler import Encounter
from ...views import Chart, Mark, Series, Stat, Views, percent, shares_chart
from ..pairwise import PairwiseGame, PairwiseParams
from .codec import SignCodec
from .metrics import THRESHOLDS, SignMetrics
from .schema import lexicon, schema_regex
from .situation import SignSituation
from .standin import SignStandIn, SignStandInSettings

if TYPE_CHECKING:
    from ...policies import Policy

Condition = Literal["nl", "nl-sw", "schema"]
CONDITIONS: tuple[Condition, ...] = ("nl", "nl-sw", "schema")
CONDITION_LABELS = {"nl": "NL", "nl-sw": "NL-SW", "schema": "Schema"}
_TEMPLATES = {"nl": "nl", "nl-sw": "nl_sw", "schema": "schema"}


@dataclass(frozen=True, kw_only=True)
class SignParams(PairwiseParams):
    """The shared parameters (`PairwiseParams`) with SIGN's defaults (the paper's Phi-3
    settings) and its own: `condition`, `lexicon_size` (M), `alpha`, `constrained_decoding`.
    `memory_length` is K; the NL condition keeps no memory whatever K says. `max_reasks` is the
    Schema condition's retries (the paper: one); the NL conditions never re-ask."""

    condition: Condition = "schema"
    lexicon_size: int = 12  # M: names C1..CM (unless `names` gives a lexicon)
    alpha: float = 0.75  # lose-shift probability
    constrained_decoding: bool = False
    # SIGN's defaults for inherited parameters
    agents: int = 24
    memory_length: int = 5
    prompt: str = ""  # empty: the condition's built-in template
    temperature: float = 0.7
    top_k: int | None = None
    top_p: float | None = 0.9
    repetition_penalty: float | None = 1.1
    max_tokens: int = 32
    max_reasks: int = 1
    fallback: Literal["random", "previous", "none"] = "none"
    pairing: Literal["sequential", "network", "rounds"] = "rounds"
    stop_at: Literal["consensus", "none"] = "none"
    max_rounds: int = 300
    success_payoff: int = 1
    failure_payoff: int = 0

    def validate(self) -> None:
        require(self.lexicon_size >= 2, f"lexicon_size (M) must be at least 2 (got {self.lexicon_size})")
        require(self.memory_length >= 0, f"memory_length (K) must be >= 0 (got {self.memory_length})")
        require(0 <= self.alpha <= 1, f"alpha (the lose-shift probability) must be in [0, 1] (got {self.alpha})")
        require(self.repetition_penalty is None or self.repetition_penalty > 0,
                f"repetition_penalty must be > 0 (got {self.repetition_penalty})")
        super().validate()

    def memory_window(self) -> int:
        """K as the agents keep it: the NL condition has no memory."""
        return 0 if self.condition == "nl" else self.memory_length

    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, max_tokens=self.max_tokens,
                        repetition_penalty=self.repetition_penalty)


class SignAgent(PopulationAgent):
    """A SIGN agent: its memory holds partner names, and it carries its current proposal."""

    def __init__(self, model: PopulationModel, policy: Policy, *, memory_length: int, current: str) -> None:
        super().__init__(model, policy, memory_length=memory_length)
        self.current = current

    def state(self) -> dict[str, Any]:
        return super().state() | {"current": self.current}

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self.current = state["current"]


class SignGame(PairwiseGame[SignParams, SignSituation]):
    name = "sign"
    Params = SignParams
    standin: SignStandInSettings = SignStandInSettings()
    summary_dtypes: ClassVar[Mapping[str, str]] = {
        "condition": "string", "agents": "Int64", "memory": "Int64", "alpha": "Float64", "lexicon_size": "Int64",
        "constrained_decoding": "boolean", "final_agreement": "Float64", "tail_agreement": "Float64",
        "mean_agreement": "Float64", "max_agreement": "Float64", "leading_name": "string",
        "rounds_to_threshold.*": "Int64", "tokens_to_threshold.*": "Int64", "total_tokens": "Int64",
        "decisions": "Int64", "compliance_rate": "Float64", "retry_rate": "Float64", "route_rates.*": "Float64",
    }
    round_dtypes: ClassVar[Mapping[str, str]] = {
        "interactions": "Int64", "successes": "Int64", "success_rate": "Float64", "productions.*": "count",
        "fallbacks": "Int64", "alternative_share": "Float64",
    }

    # --- the experiment ------------------------------------------------------------------
    def for_experiment(self, seed: int) -> SignGame:
        """The lexicon is C1..CM unless `names` gives one."""
        params = self.params
        game = self if params.names else self.with_params(names=lexicon(params.lexicon_size))
        bias_name = self.standin.bias_name
        require(bias_name is None or bias_name in game.names,
                f"standin.bias_name '{bias_name}' is not in the lexicon {', '.join(game.names)}")
        return game

    @property
    def condition(self) -> Condition:
        return self.params.condition

    @cached_property
    def template(self) -> PromptTemplate:
        sections = ("system", "user") + (("history", "entry") if self.condition != "nl" else ())
        sections += ("reminder",) if self.condition == "schema" else ()
        template = PromptTemplate.load("sign", self.params.prompt or _TEMPLATES[self.condition]).require(*sections)
        if self.condition == "nl":
            return template.require_fields(system=("lexicon",))
        return template.require_fields(system=("lexicon", "history"), history=("entries",), entry=("partner",))

    @cached_property
    def codec(self) -> SignCodec:
        """The prompt, the reading of replies and the store's encoding (codec.py)."""
        return SignCodec(self)

    def grammar(self) -> Grammar | None:
        """The schema for the server to enforce, when asked for and where there is a schema."""
        if self.params.constrained_decoding and self.condition == "schema":
            return Grammar(kind="regex", value=schema_regex(self.names))
        return None

    @cached_property
    def demands_schema(self) -> bool:
        """Whether the prompt asks for the `@say {name: Ck}` schema (the Schema condition's
        templates do; a custom template may too)."""
        return "@say" in self.template.sections["system"]

    def retries(self) -> int:
        """Re-asks after a non-compliant reply: the Schema condition's; free text has none."""
        return self.params.max_reasks if self.condition == "schema" else 0

    # --- hooks: population, encounters ----------------------------------------------------
    def build_population(self, model: PopulationModel) -> None:
        names = self.names
        for index in range(self.params.agents):
            current = names[model.random.randrange(len(names))]
            SignAgent(model, self.agent_policy(model, index), memory_length=self.params.memory_window(), current=current)

    def agent_policy(self, model: PopulationModel, index: int) -> Policy:
        """Agent `index`'s policy: override it for a mixed population (examples/mixed_sign_models.py)."""
        return LLMPolicy(model.backend_for(index), self.params.sampling(), self.codec, max_reasks=self.retries(),
                          grammar=self.grammar())

    def draw(self, model: PopulationModel, encounter: Encounter) -> tuple[float, ...]:
        """Each agent's lose-shift die: one draw per agent whatever the condition, so runs of
        the three conditions with one seed pair the same agents."""
        random = model.random.random
        return tuple(random() for _ in encounter.agents)

    def start(self, model: PopulationModel, encounter: Encounter) -> tuple[SignSituation, ...]:
        """Each agent's view: its proposal and its partners' names, with its die."""
        schema = self.demands_schema
        return tuple(
            SignSituation(self.names, agent.current, tuple(agent.memory), encounter.round + 1, agent.index, die, schema)
            for agent, die in zip(encounter.agents, encounter.drawn)
        )

    def resolve(self, model: PopulationModel, encounter: Encounter,
                decisions: tuple[Decision, Decision]) -> EncounterRecord:
        agents, views = encounter.agents, encounter.views
        said = (decisions[0].action, decisions[1].action)
        success = said[0] is not None and said[0] == said[1]
        alpha = self.params.alpha
        for agent, view, own, partner in ((agents[0], views[0], said[0], said[1]), (agents[1], views[1], said[1], said[0])):
            if partner is not None:
                agent.memory.append(partner)  # partner-only memory: what the partner said to me
            if own is not None:
                agent.current = own  # win-stay: what it said is its proposal now
            if not success and partner is not None and view.shift_die < alpha:
                agent.current = partner  # lose-shift
        payoff = self.params.success_payoff if success else self.params.failure_payoff
        return EncounterRecord(encounter.t, encounter.round, int(success),
                               [Move(agents[0].index, said[0], payoff, decisions[0].fell_back),
                                Move(agents[1].index, said[1], payoff, decisions[1].fell_back)],
                               decisions[0].calls + decisions[1].calls)

    def on_round_end(self, model: PopulationModel) -> None:
        pending = [encounter.round for encounter in model.scheduler.pending()]
        model.metrics.close_rounds(min(pending + [model.rounds_done]))

    # --- measuring -------------------------------------------------------------------------
    def new_metrics(self, model: PopulationModel) -> SignMetrics:
        size = len(model.agents)
        return SignMetrics(population=size, success_window=self.params.success_window or size,
                           consensus_window=max(1, round(self.params.consensus_window * size)),
                           threshold=self.params.consensus_threshold,
                           labels={agent.index: agent.policy.label for agent in model.agents})

    def stop_reason(self, model: PopulationModel) -> str | None:
        return "consensus" if self.params.stop_at == "consensus" and model.metrics.consensus is not None else None

    def readout(self) -> SignReadout:
        return SignReadout(self)

    def standin_part(self) -> StandInPart:
        templates = [PromptTemplate.load("sign", variant) for variant in ("schema", "nl_sw", "nl")]
        if self.params.prompt:
            templates.insert(0, self.template)
        return StandInPart(rules=[SignStandIn(templates, self.standin)],
                           ignores=("success_payoff", "failure_payoff", "temperature", "top_k", "top_p", "max_tokens",
                                    "repetition_penalty"))


class SignReadout(Readout[None]):
    """What a SIGN run shows: agreement per round and the rounds to each threshold, compliance,
    and the condition it ran under."""

    def __init__(self, game: SignGame) -> None:
        self.game = game

    def run_summary(self, model: PopulationModel[None]) -> dict[str, Any]:
        metrics: SignMetrics = model.metrics
        metrics.close_rounds(1 << 62)
        params = self.game.params
        return {
            "condition": params.condition,
            "agents": len(model.agents),
            "memory": params.memory_window(),
            "alpha": params.alpha,
            "lexicon_size": len(self.game.names),
            "constrained_decoding": self.game.grammar() is not None,
            **metrics.summary(),
        }

    def cell(self) -> str:
        """The run's cell of the paper's grid, in its words: condition, N, K, alpha."""
        params = self.game.params
        return (f"{CONDITION_LABELS[self.game.condition]}, N={params.agents}, K={params.memory_window()}, "
                f"α={params.alpha:g}")

    def views(self, model: PopulationModel[None], rounds: Mapping[int, Mapping[str, Any]]) -> Views:
        """Fig. 1 and 2 of the paper: agreement per round (the most common name's share of the
        round's names) with the thresholds reached marked, and each name's share of the round's
        choices, coloured as the lexicon orders the names in every run; the run's cell is its
        group, from its first round."""
        metrics: SignMetrics = model.metrics
        history = metrics.agreement_history
        agreement = history[-1] if history else None
        at: dict[int, list[str]] = {}  # the thresholds each round reached first, one mark per round
        for threshold in THRESHOLDS:
            if threshold in metrics.reached:
                at.setdefault(metrics.reached[threshold][0], []).append(f"{threshold:.0%}")
        reached = tuple(Mark(at=float(round_), label=", ".join(labels)) for round_, labels in sorted(at.items()))
        # x counts rounds from 1, as the paper's "rounds to 50%" does (the store's round x - 1).
        charts = (Chart(key="agreement", title="agreement per round", y_label="agreement", percent=True, y_min=0,
                        y_max=1, across="mean", marks=reached,
                        series=(Series(name="agreement", points=tuple((float(index + 1), value)
                                                                      for index, value in enumerate(history))),),
                        note="the most common name's share of the round's names; marks: thresholds first reached"),
                  shares_chart([(float(round_ + 1), {str(name): count for name, count in (line.get("productions") or {}).items()
                                                     if name not in (None, "null") and isinstance(count, int)})
                                for round_, line in sorted(rounds.items())], self.game.names, across=""))
        stats = [Stat(label="agreement", value=agreement, text=percent(agreement)),
                 Stat(label="success", value=metrics.success_rate, text=percent(metrics.success_rate))]
        for threshold in THRESHOLDS:
            round_ = metrics.reached[threshold][0] if threshold in metrics.reached else None
            stats.append(Stat(label=f"rounds to {threshold:.0%}", value=None if round_ is None else float(round_),
                              text="not yet" if round_ is None else str(round_)))
        compliance = metrics.rate("compliant")
        stats.append(Stat(label="compliance", value=compliance, text=percent(compliance)))
        limit = model.scenario.max_rounds()
        return Views(unit="round", done=model.rounds_done, total=limit or None, names=tuple(self.game.names),
                     group=self.cell(), charts=charts, stats=tuple(stats),
                     periods=tuple((float(round_ + 1), round_, round_) for round_ in range(model.rounds_done)),
                     state=f"consensus on {metrics.consensus.name}" if metrics.consensus is not None else "")

    def model_series(self, model: PopulationModel[None]) -> dict[str, float | str | None]:
        """Per step: the last closed round's agreement and the success rate, the leading name
        and its share (Readout's)."""
        metrics: SignMetrics = model.metrics
        history = metrics.agreement_history
        return super().model_series(model) | {"agreement": history[-1] if history else float("nan")}

    def live_figures(self, model: PopulationModel[None]) -> LiveFigures:
        metrics: SignMetrics = model.metrics
        shares = metrics.window_shares()
        agreement = metrics.agreement_history[-1] if metrics.agreement_history else 0.0
        lines = [("condition", CONDITION_LABELS[self.game.condition]), ("agreement", f"{agreement:.0%} (last round)")]
        reached = [f"{int(threshold * 100)}% at round {metrics.reached[threshold][0]}"
                   for threshold in THRESHOLDS if threshold in metrics.reached]
        if reached:
            lines.append(("reached", ", ".join(reached)))
        return LiveFigures(
            success_rate=metrics.success_rate,
            success_history=tuple(metrics.success_history[-60:]),
            # The five most produced names: twelve rows per run would crowd a grid of runs.
            shares=dict(sorted(((name, share) for name, share in shares.items() if share > 0),
                               key=lambda item: -item[1])[:5]),
            lines=tuple(lines),
        )






def sign_grid(*, agents: tuple[int, ...] = (12, 24), memories: tuple[int, ...] = (5, 10),
              alphas: tuple[float, ...] = (0.5, 0.75, 0.99),
              conditions: tuple[Condition, ...] = CONDITIONS) -> list[dict[str, Any]]:
    """The paper's grid as parameter variants (a scenario file's VARIANTS): NL for each N and
    alpha with no memory (K = 0, as Table 1 lists it), NL-SW and Schema for each N, K and alpha."""
    grid: list[dict[str, Any]] = []
    for condition in conditions:
        for size in agents:
            for memory in ((0,) if condition == "nl" else memories):
                for alpha in alphas:
                    grid.append({"condition": condition, "agents": size, "memory_length": memory, "alpha": alpha})
    return grid
