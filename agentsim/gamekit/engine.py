"""The engine's side of a layer game: `GameEngine`, the `Scenario` that wraps an author's
`Game` and derives every hook a run calls from it.

The author's `Game` (game.py) holds what the author writes: texts, `choice`, `outcome` or
`play_round`, `feedback`, `private`, `standin_choice`, `score`, parameters. The engine owns
the rest (the population, the groups, the tables' seeds, asking, the run's state, metrics,
the stand-in, the readout, checkpoints) and reads the game only through those names, so no
name an author picks meets one of the engine's: a game's helper `draw` is the game's, and the
scheduler calls the engine's.

`as_scenario(game)` (agentsim/scenario.py) asks the game for its engine (`Game.__scenario__`),
which is how the command line, `agentsim.run` and `PopulationModel` take a game. Each game
class gets its engine class (`engine_class`), a `GameEngine` subclass whose `Params` and
`standin` are the game's, so that an engine is rebuilt from parameters as every scenario is
(`type(scenario)(params, standin=...)`: `with_params`, `--set`, a grid's cells).
"""

from __future__ import annotations

import random
from functools import cached_property
from typing import Any, ClassVar, NamedTuple, cast

from ..agents import PopulationAgent
from ..errors import UserError
from ..llm.base import Sampling
from ..model import PopulationModel
from ..params import StandInSettings
from ..parts import StandInPart
from ..policies import LLMPolicy
from ..records import EncounterRecord, Move
from ..scenario import Scenario
from ..scheduler import Encounter, GroupPairing
from ..seeding import derive_seed
from . import presentation
from .asking import Ask, KitCodec
from .game import Game, GameParams, KitStandInSettings, KitState, serve
from .guard import game_code
from .round import LAYER_FIELDS, Player, Round, turn_reply
from .standin import KitStandIn

RECORDED_CLASS = "agentsim.games.gamekit.recorded.RecordedGame"  # a name, not an import: the layer imports no family
ROUND_SEED = 0x6B17  # what a table's seed is derived with (beside the run's seed and the encounter's t)


class PromptText(NamedTuple):
    """The prompt text a run was sent with, recorded with the experiment (a resume refuses a changed one)."""

    name: str
    text: str


class GameEngine(Scenario[GameParams, Ask, KitState]):
    """A layer game as the engine runs it: `game` (the author's `Game`) and the hooks derived
    from it. Built from a game (`GameEngine(game)`, what `engine_of` does) or, as every
    scenario, from parameters (`EngineClass(params, standin=...)`), which builds the game."""

    game_class: ClassVar[type[Game[Any]]] = Game
    name: ClassVar[str] = "game"
    Params = GameParams
    standin: KitStandInSettings = KitStandInSettings()
    # A layer game counts its rounds from 1 everywhere: prompts, `Round.number`, the round lines
    # and `Results.rounds()`, `Results.moves().round`, `transcript --round`, the figures (the
    # store's own tables keep population rounds from 0: round 1 is the store's round 0).
    round_base: ClassVar[int] = 1
    _per_game: ClassVar[bool] = False  # made by `engine_class` (not importable by name: pickled by its game)

    def __init__(self, params: Any = None, /, *, standin: StandInSettings | None = None, **changes: Any) -> None:
        if isinstance(params, Game):
            if standin is not None or changes:
                raise TypeError("GameEngine(game) takes the game alone; change the game (game.with_params(...))")
            game = params
        else:
            game = self.game_class(params, standin=standin, **changes)
        self.game: Game[Any] = game
        self.params = game.params
        self.standin = game.standin

    def __reduce__(self) -> tuple[Any, ...]:
        return engine_of, (self.game, None if self._per_game else type(self))

    # --- what the layer derives ------------------------------------------------------------
    @cached_property
    def codec(self) -> KitCodec:
        return KitCodec()

    def describe(self) -> dict[str, Any]:
        """Runs record the layer's `RecordedGame` as their class: the store holds every prompt
        and round line, so opening them needs none of the game file's code (agentsim/games/gamekit)."""
        return {"name": self.name, "class": RECORDED_CLASS}

    @property
    def template(self) -> PromptText:
        return PromptText(self.name, f"{self.game.rules}\n---\n{self.game.question}")

    def build_population(self, model: PopulationModel) -> None:
        params = self.params
        sampling = params.sampling()
        if params.constrained_decoding:
            sampling = Sampling(temperature=params.temperature, max_tokens=max(params.max_tokens, 64))
        grammar = self.codec.grammar if params.constrained_decoding else None
        for index in range(params.agents):
            PopulationAgent(model, LLMPolicy(model.backend_for(index), sampling, self.codec,
                                             max_reasks=params.max_reasks, grammar=grammar), memory_length=0)

    def pairing(self, model: PopulationModel) -> GroupPairing:
        return GroupPairing(self.params.group_size or None)

    def new_state(self, model: PopulationModel) -> KitState:
        return KitState()

    def draw(self, model: PopulationModel, encounter: Encounter) -> int:
        """The seed of the table's dice and private values, derived from the run's seed and the
        encounter's number without drawing from the run's generator: the groups alone draw from
        it, so a layer game in pairs is matched as a family game with a `RoundPairing` is."""
        return derive_seed(model.seed, ROUND_SEED, encounter.t)

    def start(self, model: PopulationModel[KitState], encounter: Encounter) -> tuple[tuple[Player, ...], int]:
        state, game = model.state, self.game
        seed = cast(int, encounter.drawn)
        players = []
        with game_code(game, f"in round {encounter.round + 1}"):
            for agent in encounter.agents:
                if agent.index in state.out:
                    continue
                player = Player(agent.index, game.player_name(agent.index), agent.policy.label,
                                state.score.get(agent.index, 0.0), state.private.get(agent.index, {}))
                private = dict(game.private(player, random.Random(derive_seed(seed, agent.index + 1))))
                clash = [key for key in private if key in LAYER_FIELDS]
                if clash:
                    raise UserError(f"{type(game).__name__} gives {player.name} the private value '{clash[0]}', which "
                                    f"the game layer fills in itself ({LAYER_FIELDS[clash[0]]}); give it another name")
                players.append(Player(player.index, player.name, player.model, player.score, private))
        return tuple(players), seed

    async def play(self, model: PopulationModel[KitState], encounter: Encounter) -> Round:
        players, seed = cast(tuple[tuple[Player, ...], int], encounter.views)
        round_ = Round(self.game, model.state, {agent.index: agent for agent in encounter.agents}, encounter.round + 1,
                       players, seed)
        if len(players) >= self.game.min_players:
            with game_code(self.game, f"in round {round_.number}"):
                await self.game.play_round(round_)
        return round_

    def resolve(self, model: PopulationModel[KitState], encounter: Encounter, answers: Round) -> EncounterRecord:
        round_, state, params = answers, model.state, self.params
        ordered = round_.in_order()
        for player in round_.players:
            index = player.index
            state.private[index] = {**player.private, **round_.kept.get(index, {})}
            state.score[index] = state.score.get(index, 0.0) + round_.payoffs.get(index, 0)
            with game_code(self.game, f"in round {round_.number}"):
                told = self.game.feedback(player, round_)
            if told:
                history = state.history.setdefault(index, [])
                history.append((round_.number, told))
                keep = params.history_rounds
                if not params.conversation and len(history) > keep:  # what no prompt shows again
                    del history[: len(history) - keep]
            if params.conversation:
                state.turns.setdefault(index, []).extend(
                    (round_.number, asked.ask.prompt, turn_reply(asked)) for asked in ordered if asked.player.index == index)
        state.out.update(round_.eliminated)
        state.ended = state.ended or round_.ended
        # Every move, in the order asked; a player's round payoff rides on its last move of the
        # round (its earlier moves carry 0), so the store's payoffs add up to the round's.
        last = {asked.player.index: position for position, asked in enumerate(ordered)}
        moves = [Move(asked.player.index, asked.action,
                      round_.payoffs.get(asked.player.index, 0) if last[asked.player.index] == position else 0,
                      asked.decision.fell_back) for position, asked in enumerate(ordered)]
        presentation.metrics_of(model).add(encounter.round, round_)
        return EncounterRecord(encounter.t, encounter.round, len(ordered), moves, round_.calls())

    def new_metrics(self, model: PopulationModel) -> presentation.KitMetrics:
        return presentation.KitMetrics(game=self.name, models={agent.index: agent.policy.label for agent in model.agents})

    def stop_reason(self, model: PopulationModel[KitState]) -> str | None:
        state: KitState | None = model.state
        if state is None:
            return None
        if state.ended:
            return state.ended
        live = len(model.agents) - len(state.out)
        return f"{live} player(s) left" if live < self.game.min_players else None

    def readout(self) -> presentation.KitReadout:
        return presentation.KitReadout(self.game)

    def standin_part(self) -> StandInPart:
        return StandInPart(rules=[KitStandIn(self.game)],
                           ignores=("temperature", "max_tokens", "history_rounds", "conversation", "constrained_decoding"))


_ENGINES: dict[type[Game[Any]], type[GameEngine]] = {}


def engine_class(game_class: type[Game[Any]]) -> type[GameEngine]:
    """The engine class of `game_class`: a `GameEngine` whose `Params`, `standin` and `name`
    are the game's (one per game class, made once). It is shown under the game's name
    (`PublicGoods(agents=8)` in a batch's rows)."""
    made = _ENGINES.get(game_class)
    if made is None:
        made = _ENGINES[game_class] = type(game_class.__name__, (GameEngine,), {
            "__module__": __name__, "__qualname__": f"GameEngine[{game_class.__qualname__}]",
            "__doc__": f"The engine of {game_class.__qualname__} (agentsim/gamekit/engine.py).",
            "game_class": game_class, "name": game_class.name, "Params": game_class.Params,
            "standin": game_class.standin, "_per_game": True})
    return made


def engine_of(game: Game[Any], cls: type[GameEngine] | None = None) -> GameEngine:
    """The engine around `game` (of `cls`, or of the game class's own engine class)."""
    return (cls or engine_class(type(game)))(game)


serve(engine_class)  # the game module runs a game through its engine (it never imports this one)
