"""The base of GAMA-Bench's games on agentsim's game layer (scenarios/gamabench/*.py): its
parameters (10 players, 20 rounds, each player's conversation kept, the prompt version), its
score from the recorded rounds, and GAMA-Bench's own prompt texts where the user points
`prompt_templates` at the `prompt_template/` folder of their own GAMA-Bench checkout; with
`exact=true` as well, each game is played as GAMA-Bench's runner plays it (exact.py): its
conversation, answer formats, reading, ranges, token limit and payoffs.

A game writes each round's outcome with `rules.py` and records it whole (`Round.record`): the
store's round line then carries GAMA-Bench's round record, which `score` reads as it reads an
imported run's.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ...gamekit import Game, GameParams, Round
from ...gamekit.engine import GameEngine, engine_class
from ...llm.base import Sampling
from ...params import require
from ...scenario import Scenario
from . import exact
from .checkout import Checkout
from .codec import GamaCodec
from .rules import PARAMETERS
from .scores import round_record
from .scoring import game_name, score
from .templates import VERSIONS, PromptTemplate, load_templates


class Field(str):
    """A GAMA-Bench input filled per player when the layer renders the text (`Field("player")`
    becomes the layer's `{player}`): a description that names the player it is sent to."""


@lru_cache(maxsize=64)
def _templates(folder: str, game: str, version: str) -> dict[str, PromptTemplate]:
    return load_templates(folder, game, version)


@dataclass(frozen=True, kw_only=True)
class GamaParams(GameParams):
    agents: int = 10
    max_rounds: int = 20
    conversation: bool = True  # GAMA-Bench keeps each player's messages, round after round
    temperature: float = 1.0
    max_tokens: int = 64
    version: str = "v1"  # which of the five prompt versions (GAMA-Bench's texts; agentsim's own wording has one)
    prompt_templates: str = ""  # the prompt_template/ folder of the user's GAMA-Bench checkout: its texts instead
    # GAMA-Bench-exact mode (exact.py): played as its runner plays it, with the checkout's texts
    exact: bool = False
    structure: str = "messages"  # exact: the runner's conversation for OpenAI-style models, or "gemini"
    cot: int = 0  # exact: the runner's chain-of-thought prompt 1-5 (0: none)
    role: int = 0  # exact: the runner's role prompt 1-3 (0: none)
    revision: str = ""  # exact: the checkout's texts as of this git commit ("" as they are)
    auction_seed: int = 42  # exact: the runner's first seed of the auction's values, counted up a round

    def validate(self) -> None:
        super().validate()
        require(self.version in VERSIONS, f"version must be one of {', '.join(VERSIONS)} (got {self.version!r})")
        require(not self.exact or bool(self.prompt_templates),
                "exact=true plays GAMA-Bench's runner with its own texts: set prompt_templates to the prompt_template/ "
                "folder of your GAMA-Bench checkout")
        require(self.structure in exact.STRUCTURES, f"structure must be one of {', '.join(exact.STRUCTURES)} "
                                                    f"(got {self.structure!r})")
        require(0 <= self.cot <= 5 and 0 <= self.role <= 3, f"cot is 0-5 and role 0-3, GAMA-Bench's conditions "
                                                            f"(got cot={self.cot}, role={self.role})")
        require(self.exact or (self.structure, self.cot, self.role, self.revision) == ("messages", 0, 0, ""),
                "structure, cot, role and revision are settings of GAMA-Bench-exact mode: add --set exact=true")
        require(self.group_size == 0, f"GAMA-Bench's games play every player together (group_size=0); its scores read "
                                      f"one table (got group_size={self.group_size})")
        require(not self.prompt_templates or Path(self.prompt_templates).is_dir(),
                f"prompt_templates must be the prompt_template/ folder of a GAMA-Bench checkout "
                f"(got {self.prompt_templates!r}, not a directory)")


    def sampling(self) -> Sampling:
        """GAMA-Bench-exact: the runner's 1,024 new tokens where max_tokens is left at agentsim's 64."""
        if self.exact and self.max_tokens == 64:
            return Sampling(temperature=self.temperature, max_tokens=exact.MAX_TOKENS)
        return super().sampling()


P = TypeVar("P", bound=GamaParams)
RECORDED = "agentsim.games.gamabench.recorded.RecordedGamaGame"
_ENGINES: dict[type[Game[Any]], type[GameEngine]] = {}


def gama_engine_class(game_class: type[Game[Any]]) -> type[GameEngine]:
    """The layer's engine class of a GAMA-Bench game class, with GAMA-Bench's codec: one per game
    class, made once (as the layer's own `engine_class`)."""
    made = _ENGINES.get(game_class)
    if made is None:
        base = engine_class(game_class)
        made = _ENGINES[game_class] = type(base.__name__, (base,), {
            "__module__": __name__, "__qualname__": base.__qualname__,
            "codec": cached_property(lambda self: GamaCodec()),
            "describe": lambda self: {"name": self.name, "class": RECORDED}})
    return made


class GamaGame(Game[P]):
    """A GAMA-Bench game: `game` names it (a rules.PARAMETERS key); players are named as
    GAMA-Bench names them (player_0, player_1, ...)."""

    game: ClassVar[str] = ""

    def __init__(self, params: P | None = None, /, **changes: Any) -> None:
        super().__init__(params, **changes)
        if self.params.exact and self.params.conversation:  # the runner's conversation is kept by exact.py
            self.params = self.params.replace(conversation=False)

    @property
    def append_instruction(self) -> bool:  # type: ignore[override]
        """GAMA-Bench-exact: the runner's request carries its own answer format, and nothing follows it."""
        return not self.params.exact

    @classmethod
    def __scenario_class__(cls) -> type[Scenario[Any, Any, Any]]:
        """The layer's engine for this game, reading calls with GAMA-Bench's codec (exact mode's
        conversation) and recording `RecordedGamaGame` as the runs' class."""
        return gama_engine_class(cls)

    @cached_property
    def checkout(self) -> Checkout:
        return Checkout(self.params.prompt_templates, self.params.revision)

    def runner_params(self) -> dict[str, Any]:
        """The parameters as GAMA-Bench's runner has them (GAMA-Bench-exact mode)."""
        return self.gama()

    async def play_exact(self, round: Round) -> None:
        """A round as GAMA-Bench's runner plays it (`exact=true`; exact.py)."""
        await exact.PLAYS[self.game](self, round)

    def shot_hits(self, round_number: int, shooter: int, rate: int, rng: random.Random) -> bool:
        """Whether a Battle Royale shot at a player hits, drawn with the shooter's hit rate (in %)."""
        return rng.random() < rate / 100

    def gama(self) -> dict[str, Any]:
        """The parameters under GAMA-Bench's names (what rules.py and scoring.py read)."""
        params = self.params.as_dict()
        return PARAMETERS[self.game] | {key: params[key] for key in PARAMETERS[self.game] if key in params} | {
            "player_num": params["agents"]}

    def player_name(self, index: int) -> str:
        return f"player_{index}"

    def score(self, rounds: Any) -> float | None:
        records = [round_record(line) for line in rounds]
        return score(game_name(self.game, self.gama()), self.gama(), records) if records else None

    def feedback(self, player: Any, round: Any) -> str:
        """With GAMA-Bench's texts, its round report alone (it names the player's choice and
        payoff itself); else the layer's default (the lines told, the choice, the payoff);
        GAMA-Bench-exact: nothing (the runner's conversation is kept apart)."""
        if self.params.exact:
            return ""
        if self.params.prompt_templates:
            return "\n\n".join(round.told.get(player.index, []))
        return super().feedback(player, round)

    def gama_text(self, kind: str, *inputs: object, template: bool = True) -> str | None:
        """GAMA-Bench's prompt `kind` with `inputs`, from the user's checkout (None without
        one: the game's own wording then). With `template` (rules, questions) its braces are
        escaped for the layer's rendering and a `Field` input becomes the layer's field; a
        report's parts (the round's result, the player's own answer, what follows) are joined."""
        folder = self.params.prompt_templates
        if not folder:
            return None
        if self.params.exact and kind == "description":
            return exact.description(self)
        marked = [f"\x00{value}\x00" if isinstance(value, Field) else value for value in inputs]
        text = "\n\n".join(_templates(folder, self.game, self.params.version)[kind].render(*marked))
        if template:
            text = text.replace("{", "{{").replace("}", "}}")
        return re.sub("\x00(\\w+)\x00", r"{\1}" if template else r"\1", text)
