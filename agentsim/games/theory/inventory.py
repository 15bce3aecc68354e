"""The minimal naming game as a scenario: rule agents with word inventories, in the same
scheduler and store as LLM agents, so a theory baseline and an LLM population are run,
recorded and plotted by the same code.

Baronchelli et al., J. Stat. Mech. (2006) P06014. An agent's memory is its inventory (a list
of words, unbounded). In an encounter the first agent drawn is the speaker: its rule policy
utters a uniformly random word of its inventory, or invents one when it is empty (from the
name pool, as in Flint Ashery et al. 2025's theory line, or a brand-new word with
`invention="new"`). The second agent, the hearer, decides nothing: if it knows the word both
collapse their inventories to it (success), otherwise it adds the word (failure). The record
of an encounter holds the speaker's move only; its outcome is the success.

With `names=("A", "B")`, `majority_name` and a committed minority this is the binary naming
game of Xie et al., PRE 84, 011130 (2011): everyone starts knowing only the majority word, the
committed agents only the alternative, and committed agents never change.

The numpy fast path with the same dynamics is `agentsim.games.theory.minimal`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ...agents import PopulationAgent
from ...model import PopulationModel
from ...parts import StandInPart
from ...policies import CommittedPolicy, RulePolicy
from ...records import Decision, EncounterRecord, Move
from ...scheduler import Encounter
from ..naming.game import NamingGame, NamingParams, NamingSituation
from ..naming.metrics import ConventionMetrics, Milestone
from ..naming.readout import NamingReadout


@dataclass(frozen=True, kw_only=True)
class MinimalNamingParams(NamingParams):
    """The naming game's parameters, with the theory's defaults: one encounter at a time
    (the sequential process the theory describes), stop when every inventory is the same
    single word. `memory_length` is unused: inventories are unbounded."""

    invention: Literal["pool", "new"] = "pool"
    max_in_flight: int = 1
    max_rounds: int = 200


def speak(situation: NamingSituation, unit: float) -> str:
    """The speaker's rule: a uniformly random word of the inventory, or, when it is empty, a
    uniformly random invention among the options."""
    choices = situation.memory or situation.options
    # The naming game's start gives the speaker's memory, which here holds words, not entries.
    return choices[int(unit * len(choices))]  # type: ignore[return-value]


class InventoryMetrics(ConventionMetrics):
    """Convention metrics plus the inventories' observables of Baronchelli et al. 2006: the
    total number of words N_w(t), its peak and when, the number of different words N_d(t),
    and the interaction at which every agent holds the same single word (global consensus).

    Agreement here is read off the inventories, not the latest names: only speakers produce
    names, so a hearer that has just collapsed its inventory to a word would still count by
    what it last said. An agent agrees on a word when its inventory is that word alone; the
    theory's convergence (every inventory the same single word) is the consensus milestone,
    so a run that stops at consensus reports one."""

    def __init__(self, *, inventories: dict[int, list[str]], **settings: Any) -> None:
        super().__init__(**settings)
        self.word_counts: dict[str, int] = {}
        for inventory in inventories.values():
            for word in inventory:
                self.word_counts[word] = self.word_counts.get(word, 0) + 1
        self.total_words = sum(self.word_counts.values())
        self.peak_words = self.total_words
        self.peak_t = 0
        self.converged_t: int | None = None
        self.sole_words: dict[int, str] = {}  # the non-committed agents whose inventory is one word
        self.sole_word_counts: dict[str, int] = {}
        for index, inventory in inventories.items():
            self._set_inventory(index, inventory)
        self._check_convergence(0, 0)

    def inventory_changed(self, t: int, round_: int, removed: list[str], added: list[str],
                          inventories: dict[int, list[str]]) -> None:
        """Encounter `t` removed and added these words; `inventories` are the changed agents' new ones."""
        counts = self.word_counts
        for word in removed:
            counts[word] -= 1
            if not counts[word]:
                del counts[word]
        for word in added:
            counts[word] = counts.get(word, 0) + 1
        self.total_words += len(added) - len(removed)
        if self.total_words > self.peak_words:
            self.peak_words, self.peak_t = self.total_words, t + 1
        for index, inventory in inventories.items():
            self._set_inventory(index, inventory)
        self._check_convergence(t + 1, round_)

    def _set_inventory(self, index: int, inventory: list[str]) -> None:
        if index in self.committed:
            return
        previous = self.sole_words.pop(index, None)
        if previous is not None:
            self.sole_word_counts[previous] -= 1
        if len(inventory) == 1:
            word = inventory[0]
            self.sole_words[index] = word
            self.sole_word_counts[word] = self.sole_word_counts.get(word, 0) + 1

    @property
    def agreement(self) -> float:
        """The share of non-committed agents whose inventory is the leading word alone."""
        deciders = self.population - len(self.committed)
        return max(self.sole_word_counts.values(), default=0) / deciders if deciders > 0 else 0.0

    def agreed_name(self) -> str | None:
        """The word most non-committed agents hold alone (ties: the first by text)."""
        counts = [(-count, word) for word, count in self.sole_word_counts.items() if count]
        return min(counts)[1] if counts else None

    @property
    def distinct_words(self) -> int:
        return len(self.word_counts)

    def _check_convergence(self, interactions: int, round_: int) -> None:
        if self.converged_t is None and self.total_words == self.population and len(self.word_counts) == 1:
            self.converged_t = interactions
            if self.consensus is None:
                self.consensus = Milestone(max(interactions - 1, 0), round_, next(iter(self.word_counts)))


class MinimalNamingGame(NamingGame):
    """The minimal naming game, run by rule agents in agentsim's scheduler."""

    name = "minimal_naming_game"
    rule_agents = True
    Params = MinimalNamingParams
    params: MinimalNamingParams
    summary_dtypes: ClassVar[Mapping[str, str]] = {
        **NamingGame.summary_dtypes, "converged_t": "Int64", "peak_words": "Int64", "peak_t": "Int64",
        "final_total_words": "Int64", "final_distinct_words": "Int64",
    }

    def build_population(self, model: PopulationModel) -> None:
        params = self.params
        speaker = RulePolicy("rule:minimal-naming", speak)
        for _ in range(params.agents):
            PopulationAgent(model, speaker, memory_length=None)
        count = params.committed_count()
        if not count:
            if (majority := self.majority_name()) is not None:
                self.fill_consensus(model, majority)
            return
        committed = CommittedPolicy(self.committed_name())
        if params.committed_mode == "replace":
            agents = model.population  # (indexing the AgentSet itself copies it every time)
            for index in sorted(model.random.sample(range(params.agents), count)):
                agents[index].policy = committed
        else:
            for _ in range(count):
                PopulationAgent(model, committed, memory_length=None)
        majority = self.majority_name()
        if majority is not None:
            self.fill_consensus(model, majority)
        for agent in model.population:
            if agent.committed:
                agent.memory.clear()
                agent.memory.append(self.committed_name())

    def fill_consensus(self, model: PopulationModel, name: str) -> None:
        """Every inventory holds just `name`."""
        for agent in model.population:
            agent.memory.clear()
            agent.memory.append(name)

    def draw(self, model: PopulationModel, encounter: Encounter) -> tuple[None, None]:
        """Nothing: the speaker's dice come from its call seed."""
        return None, None

    def start(self, model: PopulationModel, encounter: Encounter) -> tuple[NamingSituation | None, None]:
        """The speaker's view: its inventory, and what it would invent from."""
        speaker = encounter.agents[0]
        if speaker.committed:
            return None, None
        options = self.names if self.params.invention == "pool" else (f"w{encounter.t}",)
        return NamingSituation(options, tuple(speaker.memory)), None

    async def play(self, model: PopulationModel, encounter: Encounter) -> tuple[Decision, Decision]:
        speaker = encounter.agents[0]
        return await speaker.astep(encounter.views[0]), Decision(None)

    def resolve(self, model: PopulationModel, encounter: Encounter,
                decisions: tuple[Decision, Decision]) -> EncounterRecord:
        speaker, hearer = encounter.agents
        word = decisions[0].action
        assert word is not None
        removed: list[str] = []
        added: list[str] = []
        if not speaker.committed and word not in speaker.memory:  # an invention
            speaker.memory.append(word)
            added.append(word)
        success = word in hearer.memory
        if success:
            for agent in (speaker, hearer):
                if not agent.committed:
                    removed.extend(agent.memory)
                    added.append(word)
                    agent.memory.clear()
                    agent.memory.append(word)
        elif not hearer.committed:
            hearer.memory.append(word)
            added.append(word)
        metrics = model.metrics
        if isinstance(metrics, InventoryMetrics):
            metrics.inventory_changed(encounter.t, encounter.round, removed, added,
                                      {agent.index: list(agent.memory) for agent in (speaker, hearer)})
        # Only the speaker acts: the record holds its move alone (the hearer produced nothing).
        heard = word if success else None
        return EncounterRecord(encounter.t, encounter.round, int(success),
                               [Move(speaker.index, word, self.payoff(word, heard))], decisions[0].calls)

    def new_metrics(self, model: PopulationModel) -> InventoryMetrics:
        return InventoryMetrics(inventories={agent.index: list(agent.memory) for agent in model.population},
                                **self.convention_settings(model))

    def stop_reason(self, model: PopulationModel) -> str | None:
        metrics: InventoryMetrics = model.metrics
        if self.params.stop_at == "consensus" and metrics.converged_t is not None:
            return "consensus"
        return super().stop_reason(model) if self.params.stop_at == "flip" else None

    def readout(self) -> InventoryReadout:
        return InventoryReadout(self)

    def standin_part(self) -> StandInPart:
        return StandInPart()  # rule agents ask no stand-in


class InventoryReadout(NamingReadout):
    """The naming game's readout, with the inventories' convergence and their sizes."""

    def run_summary(self, model: PopulationModel[None]) -> dict[str, Any]:
        metrics: InventoryMetrics = model.metrics
        summary = super().run_summary(model)
        summary.update(
            converged_t=metrics.converged_t,
            peak_words=metrics.peak_words,
            peak_t=metrics.peak_t,
            final_total_words=metrics.total_words,
            final_distinct_words=metrics.distinct_words,
        )
        return summary
