"""The stand-in for the dilemma's prompts: a documented, seeded rule that answers from the
call's situation (`DilemmaView`: what the prompt shows, nothing more) in the format asked.
Its results are not LLM results; it exists so the whole path runs with no key and no GPU.

The rule is image scoring's discriminator (Nowak and Sigmund 1998): cooperate with a partner
whose reputation (the share of C in its last k moves) is at least `threshold`, defect against
one below it, cooperate with a newcomer when `trusting`; then tremble: play the other move
with probability `noise`. A first attempt names no move with probability `invalid_rate`.
Its dice come from the request's seed.
"""

from __future__ import annotations

from ...llm.base import Request
from ...seeding import unit_uniforms
from .params import COOPERATE, DEFECT, DilemmaStandInSettings
from .situation import DilemmaView


class DilemmaStandIn:
    def __init__(self, settings: DilemmaStandInSettings | None = None) -> None:
        self.settings = settings or DilemmaStandInSettings()

    def answer(self, request: Request) -> str | None:
        view = request.situation
        if not isinstance(view, DilemmaView):
            return None  # another game's request
        attempt = (len(request.messages) - 2) // 2
        tremble, invalid = unit_uniforms(request.seed or 0, 2)
        if attempt == 0 and invalid < self.settings.invalid_rate:
            return "Let me think about what my partner will do."
        return self.move(view, tremble)

    def move(self, view: DilemmaView, tremble: float) -> str:
        settings = self.settings
        reputation = view.partner_reputation
        cooperate = settings.trusting if reputation is None else reputation >= settings.threshold
        if tremble < settings.noise:
            cooperate = not cooperate
        return COOPERATE if cooperate else DEFECT
