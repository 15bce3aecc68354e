"""One round at one table: the object a layer game's rules are written against.

`Round` is what `Game.play_round` and `Game.outcome` get: the round's live players (its group,
when the game plays in groups), a generator seeded from the run's seed for the round's dice,
`ask`/`ask_each` to put a choice to players (concurrently, through each player's model), and
the verbs that say what the round did: `pay`, `tell`, `eliminate`, `win`, `record`, `end`.
Nothing a round does changes the run until the round resolves, so a round interrupted and
resumed is asked again with the same seeds and gives the same moves. Each player is asked at
most once per round (the store keeps one move per player and encounter): a game with several
steps per player (a proposal, then a vote) makes each step a round.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..agents import PopulationAgent, ask_together
from ..errors import UserError
from ..records import CallRecord, Decision
from .asking import Ask
from .choices import Choice, Target, as_choice

if TYPE_CHECKING:
    from .game import Game, KitState

ChoiceFor = Choice | Callable[["Player"], Choice]


@dataclass(frozen=True)
class Player:
    """A player as a round sees it: its number in the population (`index`, from 0), its name
    in prompts, its model's label, its total payoff before this round, and its private values
    (`Game.private`). Players compare and hash by `index`."""

    index: int
    name: str = field(compare=False)
    model: str = field(compare=False, default="")
    score: float = field(compare=False, default=0.0)
    private: Mapping[str, Any] = field(compare=False, default_factory=dict)


@dataclass(slots=True)
class Asked:
    """One player's ask in a round and what came of it."""

    ask: Ask
    decision: Decision
    action: str


class Round:
    """One round (of one group). `number` counts from 1; `players` are the live players of the
    table, in a random order from the run's seed where the game plays in groups; `choices`
    holds every answer so far, by player, in the table's order whatever order the replies came
    in (asks awaited together, `asyncio.gather`, fill it as each reply comes)."""

    def __init__(self, game: Game[Any], state: KitState, agents: Mapping[int, PopulationAgent], number: int,
                 players: tuple[Player, ...], seed: int) -> None:
        self.game, self.state, self.agents = game, state, agents
        self.number = number
        self.players = players
        self.random = random.Random(seed)
        self.choices: dict[Player, Any] = {}
        self.payoffs: dict[int, float] = {}
        self.told: dict[int, list[str]] = {}
        self.eliminated: dict[int, str] = {}
        self.winners: list[int] = []
        self.data: dict[str, Any] = {}
        self.ended: str | None = None
        self.asked: dict[int, Asked] = {}
        self.kept: dict[int, dict[str, Any]] = {}

    @property
    def params(self) -> Any:
        return self.game.params

    # --- asking ----------------------------------------------------------------------------
    async def ask(self, player: Player, choice: ChoiceFor, question: str | None = None, *, move: str = "choose",
                  **fields: Any) -> Any:
        """Ask one player; returns its choice's value (a `Player` for a `Target`)."""
        return (await self.ask_each([player], choice, question, move=move, **fields))[player]

    async def ask_each(self, players: Iterable[Player], choice: ChoiceFor, question: str | None = None, *,
                       move: str = "choose", **fields: Any) -> dict[Player, Any]:
        """Ask several players at once (`choice` may be a function of the player); returns
        each one's value. `question` (default: the game's `question`) and the game's rules
        are rendered with the parameters, the player's facts and `fields`."""
        players = list(players)
        again = [player.name for player in players if player.index in self.asked]
        if again:
            raise UserError(f"{type(self.game).__name__} asks {', '.join(again)} twice in round {self.number}; a "
                            f"player is asked once per round: make each step a round (docs/games-layer.md)")
        asks = [self._ask_for(player, choice, question, move, fields) for player in players]
        decisions = await ask_together([self.agents[player.index] for player in players], asks)
        answers = {}
        for player, ask, decision in zip(players, asks, decisions, strict=True):
            if decision.action is None:
                raise RuntimeError("a layer decision without an action: the fallback always names one")
            self.asked[player.index] = Asked(ask, decision, decision.action)
            answers[player] = self.choices[player] = self._value(ask.choice, decision.action)
        seat = {player.index: position for position, player in enumerate(self.players)}
        self.choices = dict(sorted(self.choices.items(), key=lambda item: seat.get(item[0].index, len(seat))))
        self.asked = dict(sorted(self.asked.items(), key=lambda item: seat.get(item[0], len(seat))))
        return answers

    def _ask_for(self, player: Player, choice: ChoiceFor, question: str | None, move: str,
                 fields: Mapping[str, Any]) -> Ask:
        chosen = as_choice(choice(player) if callable(choice) and not isinstance(choice, Choice) else choice)
        if isinstance(chosen, Target) and not chosen.labels:
            chosen = Target(*[other.name for other in self.players if other != player])
        facts = {"round": self.number, "player": player.name, "players": len(self.players), "score": player.score,
                 **player.private, **fields}
        values = {**self.game.params.as_dict(), "rounds": self.game.params.max_rounds, **facts,
                  "instruction": chosen.instruction()}
        system = render(self.game.rules, values, "rules")
        text = render(question if question is not None else self.game.question, values, "question")
        if self.game.append_instruction and "{instruction}" not in (question if question is not None else self.game.question):
            text = f"{text}\n{chosen.instruction()}" if text else chosen.instruction()
        state, index = self.state, player.index
        if self.game.params.conversation:
            turns = tuple((asked, reply) for _, asked, reply in state.turns.get(index, ()))
            # what it was told since its last turn: that turn's round's result and any later
            last = max((number for number, _, _ in state.turns.get(index, ())), default=0)
            news = [told for number, told in state.history.get(index, ()) if number >= last]
            prompt = "\n\n".join([*news, text])
        else:
            turns = ()
            shown = self.game.params.history_rounds
            past = state.history.get(index, [])[-shown:] if shown else []
            lines = "\n".join(f"- {told}" for _, told in past)
            prompt = f"Your earlier rounds, oldest first:\n{lines}\n\n{text}" if past else text
        return Ask(self.game.name, move, self.number, player.name, chosen, system, prompt, turns,
                   tuple((key, _plain(value)) for key, value in facts.items()))

    def _value(self, choice: Choice, action: str) -> Any:
        if isinstance(choice, Target):
            return next(player for player in self.players if player.name == action)
        return choice.value(action)

    # --- what the round did -------------------------------------------------------------------
    def pay(self, player: Player, amount: float) -> None:
        """Add `amount` to the player's payoff this round (and to its total)."""
        self.payoffs[player.index] = self.payoffs.get(player.index, 0) + amount

    def tell(self, player: Player | None, text: str) -> None:
        """A line the player (None: every player of the round) reads with its next prompts."""
        for each in self.players if player is None else [player]:
            self.told.setdefault(each.index, []).append(text)

    def eliminate(self, player: Player, why: str = "eliminated") -> None:
        """The player leaves the game: never asked or grouped again."""
        self.eliminated[player.index] = why

    def win(self, player: Player) -> None:
        self.winners.append(player.index)

    def keep(self, player: Player, **values: Any) -> None:
        """Values (JSON-able) the player carries into its later rounds: from the next round on
        they are among its private values (`player.private`, the `private` hook's and the
        templates'), and the game reads them from any player of a round (a public record: the
        moves a reputation is taken over). Kept when the round resolves."""
        self.kept.setdefault(player.index, {}).update(values)

    def record(self, **data: Any) -> None:
        """Round result data (JSON-able: numbers, text, lists, dicts), kept in the store's
        rounds table, the report's CSV and the score hook's input."""
        self.data.update(data)

    def end(self, reason: str) -> None:
        """The game is over after this round (an accepted proposal, a last survivor)."""
        self.ended = reason

    def calls(self) -> list[CallRecord]:
        return [call for asked in self.asked.values() for call in asked.decision.calls]


def render(template: str, values: Mapping[str, Any], what: str) -> str:
    """`template` with its {fields} filled; a field nothing provides is named in one line."""
    try:
        return template.format_map(values)
    except KeyError as error:
        raise UserError(f"the game's {what} text names {{{error.args[0]}}}, which is no parameter, fact or field of "
                        f"the ask; known: {', '.join(sorted(values))}") from None
    except (IndexError, ValueError) as error:
        raise UserError(f"the game's {what} text is not a valid template ({error}); write a literal brace as {{{{ or }}}}") from None


def _plain(value: Any) -> Any:
    """A fact as JSON-able data (a player by name)."""
    if isinstance(value, Player):
        return value.name
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    return value
