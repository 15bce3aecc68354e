"""One round at one table: the object a layer game's rules are written against.

`Round` is what `Game.play_round` and `Game.outcome` get: the round's live players (its group,
when the game plays in groups), a generator seeded from the run's seed for the round's dice,
`ask`/`ask_each` to put a choice to players (concurrently, through each player's model), and
the verbs that say what the round did: `pay`, `tell`, `eliminate`, `win`, `record`, `end`.
Nothing a round does changes the run until the round resolves, so a round interrupted and
resumed is asked again with the same seeds and gives the same moves. A player may be asked
several times in one round, one ask after another (alternating moves, a counter-offer, the next
proposal): every move is kept, in the order asked.
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

# The template fields the layer fills in itself: a parameter, a private value or an ask's field
# of the same name would be replaced by the layer's value in every prompt, so each is refused.
LAYER_FIELDS = {
    "round": "{round}, the round's number",
    "rounds": "{rounds}, which is max_rounds",
    "player": "{player}, the player's name",
    "players": "{players}, the players at the table",
    "score": "{score}, the player's total payoff",
    "instruction": "{instruction}, the answer format",
}


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
    """One ask in a round and what came of it: the player, the ask, its decision, the action
    and its value, and the ask's step in the round (from 1; asks made together share one)."""

    player: Player
    ask: Ask
    decision: Decision
    action: str
    value: Any
    step: int


class Round:
    """One round (of one group). `number` counts from 1; `players` are the live players of the
    table, in a random order from the run's seed where the game plays in groups; `choices`
    holds each player's latest answer, in the table's order whatever order the replies came in
    (asks awaited together, `asyncio.gather`, fill it as each reply comes); `moves` every
    answer, in the order asked."""

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
        self.asked: list[Asked] = []  # every ask, as answered (`in_order` sorts them as asked)
        self.kept: dict[int, dict[str, Any]] = {}
        self.asking: set[int] = set()  # players whose ask is awaited now
        self.steps = 0

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
        are rendered with the parameters, the player's facts and `fields`. A player may be
        asked again later in the round, once its earlier ask is answered."""
        players = list(players)
        self._check(players, move, fields)
        self.steps += 1
        step = self.steps
        asks = [self._ask_for(player, choice, question, move, fields, step) for player in players]
        self.asking.update(player.index for player in players)
        try:
            decisions = await ask_together([self.agents[player.index] for player in players], asks)
        finally:
            self.asking.difference_update(player.index for player in players)
        answers = {}
        for player, ask, decision in zip(players, asks, decisions, strict=True):
            if decision.action is None:
                raise RuntimeError("a layer decision without an action: the fallback always names one")
            answers[player] = self.choices[player] = self._value(ask.choice, decision.action)
            self.asked.append(Asked(player, ask, decision, decision.action, answers[player], step))
        seat = {player.index: position for position, player in enumerate(self.players)}
        self.choices = dict(sorted(self.choices.items(), key=lambda item: seat.get(item[0].index, len(seat))))
        return answers

    @property
    def moves(self) -> list[tuple[Player, str, Any]]:
        """Every answer so far, as (player, move, value), in the order asked (asks made
        together in player order)."""
        return [(asked.player, asked.ask.move, asked.value) for asked in self.in_order()]

    def _check(self, players: list[Player], move: str, fields: Mapping[str, Any]) -> None:
        name = type(self.game).__name__
        twice = sorted({player.name for player in players if players.count(player) > 1})
        if twice:
            raise UserError(f"{name} asks {', '.join(twice)} twice at once in round {self.number}; ask a player again "
                            f"only after its earlier ask is answered (await one ask, then the next)")
        busy = [player.name for player in players if player.index in self.asking]
        if busy:
            raise UserError(f"{name} asks {', '.join(busy)} in round {self.number} while its earlier ask is still "
                            f"awaited; await that ask before asking the player again")
        declared = type(self.game).moves
        if declared and move not in declared:
            raise UserError(f"{name} asks the move '{move}' in round {self.number}, which its `moves` does not name "
                            f"({', '.join(declared)}); add it to `moves`")
        clash = [key for key in fields if key in LAYER_FIELDS]
        if clash:
            raise UserError(f"{name} gives an ask the field '{clash[0]}', which the game layer fills in itself "
                            f"({LAYER_FIELDS[clash[0]]}); give the field another name")

    def _ask_for(self, player: Player, choice: ChoiceFor, question: str | None, move: str,
                 fields: Mapping[str, Any], step: int) -> Ask:
        chosen = as_choice(choice(player) if callable(choice) and not isinstance(choice, Choice) else choice)
        if isinstance(chosen, Target) and not chosen.labels:
            chosen = Target(*[other.name for other in self.players if other != player])
        facts = {"round": self.number, "player": player.name, "players": len(self.players), "score": player.score,
                 **player.private, **fields}
        values = {**self.game.params.as_dict(), "rounds": self.game.params.max_rounds, **facts,
                  "instruction": chosen.instruction()}
        system = render(self.game.rules, values, "rules")
        asked = question if question is not None else self.game.question
        text = render(asked, values, "question")
        if self.game.append_instruction and "{instruction}" not in asked:
            text = f"{text}\n{chosen.instruction()}" if text else chosen.instruction()
        state, index = self.state, player.index
        if self.game.params.conversation:
            earlier = [(question, reply) for _, question, reply in state.turns.get(index, ())]
            now = [(each.ask.prompt, turn_reply(each)) for each in self.asked if each.player.index == index]
            # what it was told since its last turn: that turn's round's result and any later
            last = self.number if now else max((number for number, _, _ in state.turns.get(index, ())), default=0)
            news = [told for number, told in state.history.get(index, ()) if number >= last]
            turns = tuple(earlier + now)
            prompt = "\n\n".join([*news, text])
        else:
            turns = ()
            shown = self.game.params.history_rounds
            past = state.history.get(index, [])[-shown:] if shown else []
            lines = "\n".join(f"- {told}" for _, told in past)
            prompt = f"Your earlier rounds, oldest first:\n{lines}\n\n{text}" if past else text
        return Ask(self.game.name, move, self.number, player.name, chosen, system, prompt, turns,
                   tuple((key, _plain(value)) for key, value in facts.items()), step)

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

    def in_order(self) -> list[Asked]:
        """Every ask in the order made, asks made together in player order (the store's, the
        round line's and the record's order)."""
        return sorted(self.asked, key=lambda asked: (asked.step, asked.player.index))

    def calls(self) -> list[CallRecord]:
        return [call for asked in self.in_order() for call in asked.decision.calls]


def turn_reply(asked: Asked) -> str:
    """What a kept conversation shows as the player's reply to an ask: what it wrote last, a
    fallback's unreadable reply included (its feedback says what was played for it, never as
    its own answer)."""
    calls = asked.decision.calls
    return calls[-1].reply if calls else ""


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
