"""`Game`: a game in one short file, as its author writes it. A subclass says what a player
chooses (`choice`), what it is shown (`rules`, `question`; earlier rounds or its own
conversation follow by themselves), how a round's outcome follows from the choices
(`outcome`, or a whole `play_round` for a sequential game) and what each player is told
(`Round.tell`, `feedback`) (docs/games-layer.md).

A `Game` is a narrow object: it holds what its author writes and nothing of the engine's, so
any helper or attribute name the author picks is the author's (a `draw`, a `template`). The
engine that runs it (agentsim/gamekit/engine.py: a `Scenario` wrapping the game) derives the
rest of a game family: the prompt codec, the stand-in's rule, metrics, live figures, the report
section, checkpoints and resume. A parameter named like a field the layer fills in itself
(`{round}`, `{rounds}`, `{player}`, ...) is refused when its class is made.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Self, TypeVar, cast

from .. import checkpoints
from ..errors import ParameterError, UserError
from ..llm.base import Sampling
from ..params import Params, StandInSettings, require
from ..scenario import Scenario
from . import presentation
from .asking import Ask
from .choices import Choice
from .round import LAYER_FIELDS, Player, Round


def _refuse_layer_fields(owner: str, names: Sequence[str]) -> None:
    clash = [name for name in names if name in LAYER_FIELDS]
    if clash:
        raise ParameterError(f"{owner} has a parameter named '{clash[0]}', a field the game layer fills in itself "
                             f"({LAYER_FIELDS[clash[0]]}); rename the parameter (e.g. '{clash[0]}_count' or "
                             f"'my_{clash[0]}')")


@dataclass(frozen=True, kw_only=True)
class GameParams(Params):
    """What every layer game has; a game's own parameters subclass it (`--set KEY=VALUE`). A
    field named like one the layer fills in (`round`, `rounds`, `player`, `players`, `score`,
    `instruction`) is refused when the class is made: the layer's value would replace it in
    every prompt."""

    agents: int = 10
    max_rounds: int = 10
    group_size: int = 0  # 0: every live player plays every round together; k: groups of k drawn every round
    history_rounds: int = 5  # a player's earlier rounds its prompt shows (0: none); not with `conversation`
    conversation: bool = False  # keep each player's conversation: its own earlier questions and replies
    temperature: float = 0.7
    max_tokens: int = 32
    max_reasks: int = 2  # re-asks with a reminder after an unusable reply, then a recorded fallback
    constrained_decoding: bool = False  # send the choice's grammar, where the backend constrains decoding

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _refuse_layer_fields(cls.__qualname__, list(vars(cls).get("__annotations__", {})))

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

P = TypeVar("P", bound=GameParams)

# How a game becomes the scenario a run runs: the engine (engine.py) tells this module when it is
# imported (`serve`), so that the engine imports the game and never the reverse; the package's
# __init__ imports the engine, so it is told before any game is run.
_ENGINE: list[Callable[[type[Game[Any]]], type[Scenario[Any, Any, Any]]]] = []


def serve(engine_class: Callable[[type[Game[Any]]], type[Scenario[Any, Any, Any]]]) -> None:
    """Make `engine_class` (the engine's) what gives a game class its scenario class."""
    _ENGINE[:] = [engine_class]


class Game(Generic[P]):
    """Base of a game in one file. Set `name`, `Params` (a `GameParams` subclass), `rules`
    and `question` (templates over the parameters and the ask's facts), and write `choice`
    and `outcome` (a simultaneous game) or `play_round` (a sequential one). Build it as
    `MyGame()`, `MyGame(agents=20)` or `MyGame(MyParams(...), standin=...)`; its parameters
    are `self.params`."""

    name: ClassVar[str] = "game"
    Params: ClassVar[type[GameParams]] = GameParams
    standin: KitStandInSettings = KitStandInSettings()
    rules: str = ""  # the system message: a template over the parameters and facts (may be a property)
    question: str = "Round {round} of {rounds}."  # each ask's text; the choice's answer format follows
    min_players: ClassVar[int] = 2  # fewer live players than this end the game
    # The moves its rounds ask (`round.ask(..., move="offer")`), where there are several: each
    # gets its own columns, fixed before the first round (Mesa's `mean_choice.offer`); a round
    # asking a move not named here is refused. Empty: any moves, Mesa's `mean_choice` the first's.
    moves: ClassVar[tuple[str, ...]] = ()
    # The choice's answer format follows each question (or stands where it says {instruction});
    # False: the game's own text asks for the format (a template read from a file).
    append_instruction: ClassVar[bool] = True
    params: P

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not (isinstance(cls.Params, type) and issubclass(cls.Params, GameParams)):
            raise ParameterError(f"{cls.__qualname__}.Params must be a GameParams subclass (got {cls.Params!r}); "
                                 f"write `class MyParams(GameParams)` with @dataclass(frozen=True, kw_only=True)")
        if dataclasses.is_dataclass(cls.Params):
            _refuse_layer_fields(cls.Params.__qualname__, [each.name for each in dataclasses.fields(cls.Params)])
        moves = cls.moves
        if (not isinstance(moves, tuple) or not all(isinstance(move, str) and move.strip() for move in moves)
                or len(set(moves)) != len(moves)):
            raise ParameterError(f"{cls.__qualname__}.moves names the moves its rounds ask, each once: a tuple of "
                                 f"names such as (\"offer\", \"respond\") (got {moves!r})")

    def __init__(self, params: P | None = None, /, *, standin: StandInSettings | None = None, **changes: Any) -> None:
        base = params if params is not None else cast(P, self.Params())
        self.params = base.replace(**changes) if changes else base
        if standin is not None:
            expected = type(type(self).standin)
            if not isinstance(standin, expected):
                raise ParameterError(f"standin= takes {expected.__name__} for {type(self).__name__} "
                                     f"(got {type(standin).__name__})")
            self.standin = standin
        require(self.params.agents >= self.min_players,
                f"agents must be >= min_players: {type(self).__name__} needs at least {self.min_players} players "
                f"(got agents={self.params.agents}); raise agents")
        require(self.params.group_size == 0 or self.params.group_size >= self.min_players,
                f"group_size must be 0 (everyone together) or >= min_players={self.min_players}: a smaller group "
                f"plays no round (got group_size={self.params.group_size})")

    def __repr__(self) -> str:
        defaults = self.Params()
        changed = [f"{each.name}={getattr(self.params, each.name)!r}" for each in dataclasses.fields(self.params)
                   if getattr(self.params, each.name) != getattr(defaults, each.name)]
        return f"{type(self).__name__}({', '.join(changed)})"

    @classmethod
    def __scenario_class__(cls) -> type[Scenario[Any, Any, Any]]:
        """The engine's class for this game class (agentsim.scenario.scenario_class asks it): a
        scenario class built from parameters, as a recorded class is rebuilt."""
        if not _ENGINE:
            raise RuntimeError("no engine runs games: import agentsim.gamekit (its engine module tells this one)")
        return _ENGINE[0](cls)

    def __scenario__(self) -> Scenario[Any, Any, Any]:
        """The engine's scenario around this game (agentsim.scenario.as_scenario calls it): what
        the command line, `agentsim.run` and `PopulationModel` run."""
        return self.__scenario_class__()(self)

    def with_params(self, **changes: Any) -> Self:
        """A copy with some parameters changed: `game.with_params(max_rounds=3)`."""
        return type(self)(self.params.replace(**changes), standin=self.standin)

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
        game asks its players in turn here (`await round.ask(proposer, ...)`), the same player
        again where the game says so (alternating moves, a counter-offer)."""
        await round.ask_each(round.players, self.choice)
        self.outcome(round)

    def feedback(self, player: Player, round: Round) -> str:
        """What `player` reads about this round in its later prompts: by default the lines the
        round told it, its own choices and its payoff; nothing for a round it sat out (asked,
        told and paid nothing)."""
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
        """How prompts name player `index` (from 0)."""
        return f"Player {index + 1}"
