"""`Game`: a game in one short file. A subclass says what a player chooses (`choice`), what it
is shown (`rules`, `question`; earlier rounds or its own conversation follow by themselves),
how a round's outcome follows from the choices (`outcome`, or a whole `play_round` for a
sequential game) and what each player is told (`Round.tell`, `feedback`); the layer derives the
rest of a game family from it: the prompt codec, the stand-in's rule, metrics, live figures,
the report section, checkpoints and resume (docs/games-layer.md).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar, cast

from .. import checkpoints
from ..agents import PopulationAgent
from ..errors import UserError
from ..llm.base import Sampling
from ..model import PopulationModel
from ..params import Params, StandInSettings, require
from ..parts import StandInPart
from ..policies import LLMPolicy
from ..records import EncounterRecord, Move
from ..scenario import Scenario
from ..scheduler import Encounter, GroupPairing
from ..seeding import derive_seed
from . import presentation
from .asking import Ask, KitCodec
from .choices import Choice
from .guard import game_code
from .round import Player, Round


@dataclass(frozen=True, kw_only=True)
class GameParams(Params):
    """What every layer game has; a game's own parameters subclass it (`--set KEY=VALUE`)."""

    agents: int = 10
    max_rounds: int = 10
    group_size: int = 0  # 0: every live player plays every round together; k: groups of k drawn every round
    history_rounds: int = 5  # a player's earlier rounds its prompt shows (0: none); not with `conversation`
    conversation: bool = False  # keep each player's conversation: its own earlier questions and replies
    temperature: float = 0.7
    max_tokens: int = 32
    max_reasks: int = 2  # re-asks with a reminder after an unusable reply, then a recorded fallback
    constrained_decoding: bool = False  # send the choice's grammar, where the backend constrains decoding

    def validate(self) -> None:
        require(self.agents >= 1, f"agents must be at least 1 (got {self.agents})")
        require(self.max_rounds >= 1, f"max_rounds must be >= 1 (got {self.max_rounds})")
        require(0 <= self.group_size <= self.agents, f"group_size must be from 0 (everyone) to agents={self.agents} "
                                                     f"(got {self.group_size})")
        require(self.history_rounds >= 0, f"history_rounds must be >= 0 (got {self.history_rounds})")
        require(self.max_tokens >= 1, f"max_tokens must be >= 1 (got {self.max_tokens})")
        require(0 <= self.max_reasks <= 100, f"max_reasks must be between 0 and 100 (got {self.max_reasks})")
        self.sampling()

    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, max_tokens=self.max_tokens)


@dataclass(frozen=True, kw_only=True)
class KitStandInSettings(StandInSettings):
    """The layer's stand-in (agentsim/gamekit/standin.py): `--set standin.invalid_rate=0.2`."""

    invalid_rate: float = 0.05  # a first attempt the game cannot read (so re-asks and fallbacks run)

    def validate(self) -> None:
        require(0 <= self.invalid_rate < 1, f"standin.invalid_rate must be from 0 to below 1 (got {self.invalid_rate}): "
                                            f"it is the chance that a first attempt is unreadable, and at 1 no first "
                                            f"attempt would ever be read; use a value such as 0.5")


@dataclass(slots=True)
class KitState:
    """A layer game's run state (`model.state`, checkpointed): each player's total payoff,
    private values, the lines it was told (round, text), its conversation (round, question,
    reply), the eliminated players (why), and why the game ended."""

    score: dict[int, float] = field(default_factory=dict)
    private: dict[int, dict[str, Any]] = field(default_factory=dict)
    history: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    turns: dict[int, list[tuple[int, str, str]]] = field(default_factory=dict)
    out: dict[int, str] = field(default_factory=dict)
    ended: str | None = None


checkpoints.register(KitState)


class PromptText(NamedTuple):
    """The prompt text a run was sent with, recorded with the experiment (a resume refuses a changed one)."""

    name: str
    text: str


P = TypeVar("P", bound=GameParams)
RECORDED_CLASS = "agentsim.games.gamekit.recorded.RecordedGame"  # a name, not an import: the layer imports no family
ROUND_SEED = 0x6B17  # what a table's seed is derived with (beside the run's seed and the encounter's t)


class Game(Scenario[P, Ask, KitState], Generic[P]):
    """Base of a game in one file. Set `name`, `Params` (a `GameParams` subclass), `rules`
    and `question` (templates over the parameters and the ask's facts), and write `choice`
    and `outcome` (a simultaneous game) or `play_round` (a sequential one)."""

    name: ClassVar[str] = "game"
    Params: ClassVar[type[Params]] = GameParams
    standin: KitStandInSettings = KitStandInSettings()
    rules: str = ""  # the system message: a template over the parameters and facts (may be a property)
    question: str = "Round {round} of {rounds}."  # each ask's text; the choice's answer format follows
    min_players: ClassVar[int] = 2  # fewer live players than this end the game
    # The choice's answer format follows each question (or stands where it says {instruction});
    # False: the game's own text asks for the format (a template read from a file).
    append_instruction: ClassVar[bool] = True
    # A layer game counts its rounds from 1 everywhere: prompts, `Round.number`, the round lines
    # and `Results.rounds()`, `Results.moves().round`, `transcript --round`, the figures (the
    # store's own tables keep population rounds from 0: round 1 is the store's round 0).
    round_base: ClassVar[int] = 1

    def __init__(self, params: P | None = None, /, *, standin: StandInSettings | None = None, **changes: Any) -> None:
        super().__init__(params, standin=standin, **changes)
        game = cast(GameParams, self.params)
        require(game.agents >= self.min_players,
                f"agents must be >= min_players: {type(self).__name__} needs at least {self.min_players} players "
                f"(got agents={game.agents}); raise agents")
        require(game.group_size == 0 or game.group_size >= self.min_players,
                f"group_size must be 0 (everyone together) or >= min_players={self.min_players}: a smaller group "
                f"plays no round (got group_size={game.group_size})")

    # --- what a game writes ----------------------------------------------------------------
    def choice(self, player: Player) -> Choice:
        """What `player` chooses in a simultaneous round."""
        raise UserError(f"{type(self).__name__} defines no `choice(self, player)` (nor a `play_round` of its own); "
                        f"write one (docs/games-layer.md)")

    def outcome(self, round: Round) -> None:
        """Pay, tell, eliminate and record from `round.choices` (a simultaneous round)."""
        raise UserError(f"{type(self).__name__} defines no `outcome(self, round)` (nor a `play_round` of its own); "
                        f"write one (docs/games-layer.md)")

    async def play_round(self, round: Round) -> None:
        """A round: by default every live player chooses at once, then `outcome`. A sequential
        game asks its players in turn here (`await round.ask(proposer, ...)`)."""
        await round.ask_each(round.players, self.choice)
        self.outcome(round)

    def feedback(self, player: Player, round: Round) -> str:
        """What `player` reads about this round in its later prompts: by default the lines the
        round told it, its own choice and its payoff."""
        return presentation.feedback(player, round)

    def private(self, player: Player, rng: random.Random) -> Mapping[str, Any]:
        """The player's private values this round (a valuation), drawn with `rng` (from the
        run's seed); they fill the rules' and questions' fields. Default: none (kept ones kept)."""
        return player.private

    def standin_choice(self, ask: Ask, rng: random.Random) -> Any:
        """The stand-in's choice for `ask` (a value of its choice); default: uniformly random."""
        return ask.choice.draw(rng)

    def score(self, rounds: Sequence[Mapping[str, Any]]) -> float | None:
        """The game's own score of a run, from its recorded rounds (the store's round lines:
        `groups`, each with `moves`, `payoffs`, `data`, ...); None: no score."""
        return None

    def player_name(self, index: int) -> str:
        return f"Player {index + 1}"

    # --- what the layer derives ------------------------------------------------------------
    @cached_property
    def codec(self) -> KitCodec:
        return KitCodec()

    def describe(self) -> dict[str, Any]:
        """Runs record the layer's `RecordedGame` as their class: the store holds every prompt
        and round line, so opening them needs none of this file's code (agentsim/games/gamekit)."""
        return {"name": self.name, "class": RECORDED_CLASS}

    @property
    def template(self) -> PromptText:
        return PromptText(self.name, f"{self.rules}\n---\n{self.question}")

    def build_population(self, model: PopulationModel) -> None:
        params = cast(GameParams, self.params)
        sampling = params.sampling()
        if params.constrained_decoding:
            sampling = Sampling(temperature=params.temperature, max_tokens=max(params.max_tokens, 64))
        grammar = self.codec.grammar if params.constrained_decoding else None
        for index in range(params.agents):
            PopulationAgent(model, LLMPolicy(model.backend_for(index), sampling, self.codec,
                                             max_reasks=params.max_reasks, grammar=grammar), memory_length=0)

    def pairing(self, model: PopulationModel) -> GroupPairing:
        size = cast(GameParams, self.params).group_size
        return GroupPairing(size or None)

    def new_state(self, model: PopulationModel) -> KitState:
        return KitState()

    def draw(self, model: PopulationModel, encounter: Encounter) -> int:
        """The seed of the table's dice and private values, derived from the run's seed and the
        encounter's number without drawing from the run's generator: the groups alone draw from
        it, so a layer game in pairs is matched as a family game with a `RoundPairing` is."""
        return derive_seed(model.seed, ROUND_SEED, encounter.t)

    def start(self, model: PopulationModel[KitState], encounter: Encounter) -> tuple[tuple[Player, ...], int]:
        state: KitState = model.state
        seed = cast(int, encounter.drawn)
        players = []
        with game_code(self, f"in round {encounter.round + 1}"):
            for agent in encounter.agents:
                if agent.index in state.out:
                    continue
                player = Player(agent.index, self.player_name(agent.index), agent.policy.label,
                                state.score.get(agent.index, 0.0), state.private.get(agent.index, {}))
                private = dict(self.private(player, random.Random(derive_seed(seed, agent.index + 1))))
                players.append(Player(player.index, player.name, player.model, player.score, private))
        return tuple(players), seed

    async def play(self, model: PopulationModel[KitState], encounter: Encounter) -> Round:
        players, seed = cast(tuple[tuple[Player, ...], int], encounter.views)
        round_ = Round(self, model.state, {agent.index: agent for agent in encounter.agents}, encounter.round + 1,
                       players, seed)
        if len(players) >= self.min_players:
            with game_code(self, f"in round {round_.number}"):
                await self.play_round(round_)
        return round_

    def resolve(self, model: PopulationModel[KitState], encounter: Encounter, answers: Round) -> EncounterRecord:
        round_, state, params = answers, model.state, cast(GameParams, self.params)
        for player in round_.players:
            index = player.index
            state.private[index] = {**player.private, **round_.kept.get(index, {})}
            state.score[index] = state.score.get(index, 0.0) + round_.payoffs.get(index, 0)
            with game_code(self, f"in round {round_.number}"):
                told = self.feedback(player, round_)
            if told:
                history = state.history.setdefault(index, [])
                history.append((round_.number, told))
                keep = params.history_rounds
                if not params.conversation and len(history) > keep:  # what no prompt shows again
                    del history[: len(history) - keep]
            asked = round_.asked.get(index)
            if asked is not None and params.conversation:
                # what the player wrote, a fallback's unreadable reply included: the feedback says what was played for it
                calls = asked.decision.calls
                reply = calls[-1].reply if calls else ""
                state.turns.setdefault(index, []).append((round_.number, asked.ask.prompt, reply))
        state.out.update(round_.eliminated)
        state.ended = state.ended or round_.ended
        moves = [Move(index, asked.action, round_.payoffs.get(index, 0), asked.decision.fell_back)
                 for index, asked in round_.asked.items()]
        presentation.metrics_of(model).add(encounter.round, round_)
        return EncounterRecord(encounter.t, encounter.round, len(round_.asked), moves, round_.calls())

    def new_metrics(self, model: PopulationModel) -> presentation.KitMetrics:
        return presentation.KitMetrics(game=self.name, models={agent.index: agent.policy.label for agent in model.agents})

    def stop_reason(self, model: PopulationModel[KitState]) -> str | None:
        state: KitState | None = model.state
        if state is None:
            return None
        if state.ended:
            return state.ended
        live = len(model.agents) - len(state.out)
        return f"{live} player(s) left" if live < self.min_players else None

    def readout(self) -> presentation.KitReadout:
        return presentation.KitReadout(self)

    def standin_part(self) -> StandInPart:
        from .standin import KitStandIn

        return StandInPart(rules=[KitStandIn(self)],
                           ignores=("temperature", "max_tokens", "history_rounds", "conversation", "constrained_decoding"))
