"""The stand-in for every layer game: a documented, seeded rule that answers an `Ask` in the
text format asked, from the ask itself (its choice and facts; nothing but what the prompt
shows). Its results are the rule's, not a language model's.

The rule: with probability `invalid_rate` a first attempt gives no usable answer (so the
re-ask path and, when re-asks run out, the recorded fallback run too); otherwise the game's
`standin_choice(ask, rng)` picks the choice (default: uniformly random over the choice: an option, a
whole or real number in the range, a split uniform over all splits, a target) and the rule
writes it as a player would (`Choice.reply`: "7.", "accept.", "Player 3.", "40, 30, 30").
Its dice come from the request's seed, so the same request always gets the same answer.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from ..llm.base import Request
from ..seeding import unit_uniforms
from .asking import Ask
from .guard import game_code

if TYPE_CHECKING:
    from .game import Game

UNREADABLE = "Let me think about this round first."


class KitStandIn:
    def __init__(self, game: Game[Any]) -> None:
        self.game = game

    def answer(self, request: Request) -> str | None:
        ask = request.situation
        if not isinstance(ask, Ask) or ask.game != self.game.name:
            return None  # another game's request
        attempt = sum(1 for message in request.messages if message.role == "assistant") - len(ask.turns)
        invalid, = unit_uniforms(request.seed or 0, 1)
        if attempt == 0 and invalid < self.game.standin.invalid_rate:
            return UNREADABLE
        rng = random.Random(request.seed or 0)
        with game_code(self.game, f"in round {ask.round} (its standin_choice)"):
            return ask.choice.reply(self.game.standin_choice(ask, rng))
