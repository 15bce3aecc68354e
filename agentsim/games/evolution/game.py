"""The cultural-evolution scenario on the common scheduler: generations of a two-player game
whose agents write their own strategies and cultural norms (Liu 2025, Algorithm 1).

Every scheduler round is one phase of a generation (`population.phases`): a text task for
some agents, each alone (strategy, norms), or one round of a game in pairs. Between rounds,
`on_round_end` closes games (each agent's final payoff), selects the survivors at a
generation's end and puts newcomers in the others' slots, and starts the next game (resets
and pairs drawn from the run's generator). Every call goes through the agent's LLM policy and
is recorded with its prompt's context; every generation's roster (names, parents, strategies,
norms, scores, survival) is a row of the store's `rounds` table and a line of summary.json.

Subclasses (`DonorGame`, `StagHunt`) say what a game round asks and how it resolves.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ...figures import LiveFigures
from ...parts import Readout, StandInPart
from ...policies import LLMPolicy
from ...records import Decision, EncounterRecord, Move
from ...scenario import Scenario
from ...views import Chart, Series, Stat, Texts, Views, percent
from . import prompts
from .codec import EvolutionCodec
from .metrics import EvolutionMetrics
from .params import CONDITION_LABELS, EvolutionParams
from .population import (
    EvolutionAgent,
    GenerationPairing,
    Phase,
    RunState,
    phases,
    select,
)
from .prompts import NORM_KINDS, Situation, Task
from .standin import EvolutionStandIn, EvolutionStandInSettings

if TYPE_CHECKING:
    from ...agents import PopulationAgent
    from ...model import PopulationModel
    from ...scheduler import Encounter

E = TypeVar("E", bound=EvolutionParams)


class CulturalEvolution(Scenario[E, Situation, RunState]):
    name: ClassVar[str] = "cultural_evolution"
    game_label: ClassVar[str] = ""
    params: E
    standin: EvolutionStandInSettings = EvolutionStandInSettings()

    # --- what a subclass provides -------------------------------------------------------
    @cached_property
    def codec(self) -> EvolutionCodec:
        """The game's prompt codec: the text tasks' prompts (codec.py) and its own turns'."""
        raise NotImplementedError

    def game_order(self, model: PopulationModel, game: int, previous: list[int]) -> list[int]:
        """The population's order for game `game`, drawn from the run's generator at its start."""
        raise NotImplementedError

    def round_groups(self, order: list[int], phase: Phase) -> list[tuple[int, ...]]:
        """A game round's pairs, from the game's order."""
        raise NotImplementedError

    def reset_game(self, agent: EvolutionAgent) -> None:
        raise NotImplementedError

    def game_view(self, model: PopulationModel, encounter: Encounter, phase: Phase) -> Any:
        raise NotImplementedError

    async def play_round(self, model: PopulationModel, encounter: Encounter) -> Any:
        raise NotImplementedError

    def resolve_round(self, model: PopulationModel, encounter: Encounter, answers: Any, phase: Phase) -> EncounterRecord:
        raise NotImplementedError

    # --- the schedule -------------------------------------------------------------------------
    @cached_property
    def schedule(self) -> tuple[Phase, ...]:
        return phases(self.params)

    def phase(self, round_: int) -> Phase:
        return self.schedule[round_]

    def max_rounds(self) -> int:
        limit = self.params.max_rounds
        return min(limit, len(self.schedule)) if limit else len(self.schedule)

    def stop_reason(self, model: PopulationModel) -> str | None:
        """`generations` once the last generation has played (`max_rounds` says a limit cut it short)."""
        return "generations" if model.rounds_done >= len(self.schedule) else None

    # --- population ------------------------------------------------------------------------
    def build_population(self, model: PopulationModel) -> None:
        for index in range(self.params.agents):
            agent = EvolutionAgent(model, self.agent_policy(model, index))
            agent.name = f"1_{index + 1}"

    def agent_policy(self, model: PopulationModel, index: int) -> LLMPolicy:
        """Agent `index`'s policy: override it for a mixed population."""
        return LLMPolicy(model.backend_for(index), self.params.sampling(), self.codec, max_reasks=self.params.max_reasks,
                         grammar=self.codec.grammar)

    def pairing(self, model: PopulationModel) -> GenerationPairing:
        return GenerationPairing(self)

    def new_metrics(self, model: PopulationModel) -> EvolutionMetrics:
        return EvolutionMetrics()

    def new_state(self, model: PopulationModel[RunState]) -> RunState:
        """The current game's order and the survivors' advice for the next generation."""
        return RunState(order=[], advice=[])

    @staticmethod
    def agents_of(model: PopulationModel) -> list[EvolutionAgent]:
        return model.population

    def groups(self, model: PopulationModel[RunState], phase: Phase) -> list[tuple[int, ...]]:
        agents = self.agents_of(model)
        if phase.kind == "play":
            return self.round_groups(model.state.order, phase)
        if phase.generation == 1 or phase.kind == "revise":  # everyone, then the survivors
            chosen = [agent for agent in agents if phase.generation == 1 or agent.born < phase.generation]
        else:
            chosen = [agent for agent in agents if agent.born == phase.generation]
        return [(agent.index,) for agent in chosen]

    # --- encounters ----------------------------------------------------------------------------
    def start(self, model: PopulationModel[RunState], encounter: Encounter) -> Any:
        phase = self.phase(encounter.round)
        if phase.kind == "play":
            return self.game_view(model, encounter, phase)
        (agent,) = encounter.agents
        assert isinstance(agent, EvolutionAgent)
        kind, source = phase.kind, ""
        if kind == "inherit":
            source = advice_block(model.state.advice, with_scores=self.params.advice_with_scores)
        elif kind == "mutate_strategy":
            source = self._parent(model, agent).strategy
        elif kind == "mutate":
            source = self._parent(model, agent).norms
        elif kind == "elicit":
            source = prompts.NORM_SEEDS[self.params.condition]
        return Task(kind, agent.name, phase.generation, agent.norms, source, agent.strategy)

    def reads(self, model: PopulationModel, encounter: Encounter) -> tuple[PopulationAgent, ...]:
        phase = self.phase(encounter.round)
        if phase.kind in ("mutate", "mutate_strategy"):
            return (self._parent(model, encounter.agents[0]),)
        return ()

    @staticmethod
    def _parent(model: PopulationModel, agent: EvolutionAgent) -> EvolutionAgent:
        assert agent.parent is not None
        return model.population[agent.parent]

    async def play(self, model: PopulationModel, encounter: Encounter) -> Any:
        if isinstance(encounter.views, Task):
            return await encounter.agents[0].astep(encounter.views)
        return await self.play_round(model, encounter)

    def resolve(self, model: PopulationModel, encounter: Encounter, answers: Any) -> EncounterRecord:
        phase = self.phase(encounter.round)
        if phase.kind == "play":
            return self.resolve_round(model, encounter, answers, phase)
        decision: Decision = answers
        (agent,) = encounter.agents
        assert isinstance(agent, EvolutionAgent)
        text = decision.action or ""
        if phase.kind in NORM_KINDS:
            agent.norms = text
        else:
            agent.strategy = text
        model.metrics.text_written(phase.kind, decision.fallback)
        return EncounterRecord(encounter.t, encounter.round, 0, [Move(agent.index, decision.action, 0.0)], decision.calls)

    # --- between rounds: games, selection, newcomers ---------------------------------------------
    def on_round_end(self, model: PopulationModel[RunState]) -> None:
        done = self.phase(model.rounds_done - 1)
        agents = self.agents_of(model)
        if done.kind == "play" and done.round == self.params.rounds - 1:
            for agent in agents:
                agent.scores.append(agent.payoff)
            if done.game == self.params.games - 1:
                self._end_generation(model, done.generation, model.rounds_done - 1)
        if model.rounds_done < len(self.schedule):
            upcoming = self.phase(model.rounds_done)
            if upcoming.kind == "play" and upcoming.round == 0:
                for agent in agents:
                    self.reset_game(agent)
                state = model.state
                state.order = self.game_order(model, upcoming.game, state.order)

    def _end_generation(self, model: PopulationModel[RunState], generation: int, round_: int) -> None:
        params = self.params
        agents = self.agents_of(model)
        scores = [agent.score for agent in agents]
        surviving = select(scores, params.survivors(), params.selection, model.random)
        roster = [{"agent": agent.index, "name": agent.name, "born": agent.born, "parent": agent.parent_name or None,
                   "strategy_from": list(agent.sources), "strategy": agent.strategy, "norms": agent.norms,
                   "scores": list(agent.scores), "score": agent.score, "survived": agent.index in surviving}
                  for agent in agents]
        model.metrics.close_generation(round_, generation, roster, [agents[position].name for position in surviving])
        model.state.advice = [(agents[p].name, agents[p].score, agents[p].strategy) for p in surviving]
        if generation < params.generations:
            newcomers = [agent for agent in agents if agent.index not in surviving]
            for number, agent in enumerate(newcomers):
                parent = agents[surviving[number % len(surviving)]]
                agent.name, agent.born = f"{generation + 1}_{number + 1}", generation + 1
                agent.parent, agent.parent_name = parent.index, parent.name
                agent.strategy = agent.norms = ""
                mutated = params.strategy_inheritance == "mutate"
                agent.sources = [parent.name] if mutated else [agents[p].name for p in surviving]
        for agent in agents:
            agent.scores = []

    # --- results ---------------------------------------------------------------------------------
    def readout(self) -> EvolutionReadout:
        return EvolutionReadout(self)

    def standin_part(self) -> StandInPart:
        return StandInPart(rules=[EvolutionStandIn(self.standin)])


class EvolutionReadout(Readout[RunState]):
    """What a run of generations shows: the generation and phase it is at, and each finished
    generation's roster and payoffs (`EvolutionMetrics.summary`)."""

    def __init__(self, game: CulturalEvolution[Any]) -> None:
        self.game = game

    def run_summary(self, model: PopulationModel[RunState]) -> dict[str, Any]:
        metrics: EvolutionMetrics = model.metrics
        game = self.game
        return {"game": game.name, "condition": game.params.condition, "agents": game.params.agents,
                "rounds_per_game": game.params.rounds, "games_per_generation": game.params.games,
                "generations": metrics.summary()}

    def views(self, model: PopulationModel[RunState], rounds: Mapping[int, Mapping[str, Any]]) -> Views:
        """The papers' figures by generation: the resources agents end a generation with (the
        mean final payoff, with the range over agents), how much donors give (the Donor game)
        or how often agents hunt stag, and the strategies of the last generation, best first.
        A click on a generation opens its calls: strategies, advice and every game round."""
        metrics: EvolutionMetrics = model.metrics
        game, params = self.game, self.game.params
        closed = metrics.generations
        resources = Series(
            name="mean final payoff",
            points=tuple((float(record["generation"]), float(record["mean_payoff"])) for record in closed),
            band=tuple((float(record["generation"]), float(min(record["payoffs"].values())),
                        float(max(record["payoffs"].values()))) for record in closed if record["payoffs"]))
        charts = [Chart(key="resources", title="resources per generation (final payoff)", y_label="payoff",
                        series=(resources,), across="mean", note="line: the mean; band: lowest to highest agent")]
        giving = "donation_fraction" if game.name.startswith("donor") else "cooperation_rate"
        title = "share of resources donated" if giving == "donation_fraction" else "stag hunts per choice"
        charts.append(Chart(key="giving", title=f"{title} per generation", y_label="share", percent=True, y_min=0, y_max=1,
                            across="mean", series=(Series(name=title, points=tuple(
                                (float(record["generation"]), float(record[giving])) for record in closed
                                if record.get(giving) is not None)),), note="fallbacks left out"))
        round_ = min(model.rounds_done, len(game.schedule) - 1)
        phase = game.phase(round_)
        done = sum(1 for entry in game.schedule[:model.rounds_done] if entry.generation == phase.generation)
        in_generation = sum(1 for entry in game.schedule if entry.generation == phase.generation)
        finished = model.rounds_done >= len(game.schedule) or model.stop_reason is not None
        last = closed[-1] if closed else None
        stats = [Stat(label="generation", value=float(phase.generation), text=f"{phase.generation} of {params.generations}")]
        if last is not None:
            stats.append(Stat(label="mean payoff", value=float(last["mean_payoff"]),
                              text=f"{last['mean_payoff']:.2f} (generation {last['generation']})"))
            share = last.get(giving)
            stats.append(Stat(label=title, value=share, text=percent(share)))
        if giving == "donation_fraction" and metrics.donations and not finished:
            share = metrics.donated / metrics.donations
            stats.append(Stat(label="donated this generation", value=share, text=f"{share:.0%} so far"))
        texts = []
        rosters = [line for _, line in sorted(rounds.items()) if isinstance(line.get("roster"), list)]
        if rosters:
            roster = sorted(rosters[-1]["roster"], key=lambda entry: -float(entry.get("score") or 0))
            texts.append(Texts(title=f"generation {rosters[-1].get('generation')}'s strategies, best first", rows=tuple(
                (f"{entry.get('name')} ({float(entry.get('score') or 0):.2f}{', survived' if entry.get('survived') else ''})",
                 short(str(entry.get("strategy") or "")))
                for entry in roster[:SHOWN_STRATEGIES])))
        periods: dict[int, list[int]] = {}
        for index, entry in enumerate(game.schedule):
            periods.setdefault(entry.generation, []).append(index)
        doing = f"game {phase.game + 1}, round {phase.round + 1}" if phase.kind == "play" else PHASE_WORDS.get(phase.kind, phase.kind)
        return Views(unit="generation", total=float(params.generations),
                     done=float(len(closed)) if finished else phase.generation - 1 + done / max(in_generation, 1),
                     state=(f"{len(closed)} generations done" if finished else
                            f"generation {phase.generation} of {params.generations}: {doing}"),
                     group=CONDITION_LABELS[params.condition], charts=tuple(charts), stats=tuple(stats), texts=tuple(texts),
                     periods=tuple((float(generation), found[0], found[-1]) for generation, found in sorted(periods.items())))

    def model_series(self, model: PopulationModel[RunState]) -> dict[str, float | str | None]:
        """Per step: the generation under way, and the last finished generation's mean payoff,
        donation fraction (Donor game) and stag-hunt rate (Stag Hunt)."""
        metrics: EvolutionMetrics = model.metrics
        game = self.game
        last = metrics.generations[-1] if metrics.generations else {}

        def number(key: str) -> float:  # NaN, not None, where there is none yet: a column keeps its float dtype
            value = last.get(key)
            return float("nan") if value is None else float(value)

        return {"generation": float(game.phase(min(model.rounds_done, len(game.schedule) - 1)).generation),
                "mean_payoff": number("mean_payoff"), "donation_fraction": number("donation_fraction"),
                "cooperation_rate": number("cooperation_rate")}

    def live_figures(self, model: PopulationModel[RunState]) -> LiveFigures:
        metrics: EvolutionMetrics = model.metrics
        game = self.game  # the run's variant: the readout is made from `model.scenario`
        round_ = min(model.rounds_done, len(game.schedule) - 1)
        phase = game.phase(round_)
        doing = f"game {phase.game + 1}, round {phase.round + 1}" if phase.kind == "play" else PHASE_WORDS.get(phase.kind, phase.kind)
        lines = [("condition", CONDITION_LABELS[game.params.condition]),
                 ("generation", f"{phase.generation} of {game.params.generations}: {doing}")]
        if metrics.generations:
            last = metrics.generations[-1]
            lines.append(("mean payoff", f"{last['mean_payoff']:.2f} (generation {last['generation']})"))
        return LiveFigures(lines=tuple(lines))


SHOWN_STRATEGIES = 6  # a generation's strategies shown on the page, best first
PHASE_WORDS = {"strategy": "writing strategies", "elicit": "writing norms", "inherit": "reading the survivors' advice",
               "mutate_strategy": "mutating strategies", "revise": "revising norms", "mutate": "mutating norms"}


def short(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def advice_block(advice: list[tuple[str, float, str]], *, with_scores: bool) -> str:
    """The survivors' advice as the inheritance prompt shows it: Vallinder and Hughes's
    notebook formats the list of strategies into the prompt (`f"{inherited_strategies}"`, a
    Python list's text, best first); `with_scores` lists each as "name (final score X): ..."."""
    if with_scores:
        return "\n".join(f"{name} (final score {score:g}): {strategy}" for name, score, strategy in advice)
    return str([strategy for _, _, strategy in advice])
