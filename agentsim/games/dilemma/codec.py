"""The prompt codec: the prompt a player is asked with, how its reply is read, the reminder
after an unusable reply, the recorded fallback, and the situation in a few bytes for the
store (and back, to rebuild the exact prompt of a recorded call).

The prompt follows the iterated-dilemma prompts of the LLM literature (Fontana et al. 2024,
"Nicer than humans"; Akata et al. 2023): the payoff matrix in words, the player's own recent
rounds, and, as in image scoring (Nowak and Sigmund 1998), the partner's public reputation:
how many of its last k moves were C. The answer is one letter.
"""

from __future__ import annotations

import re

from ...codec import Codec, Parsed
from ...llm.base import Message
from .params import ACTIONS, COOPERATE, DEFECT, DilemmaParams
from .situation import DilemmaView, Play

SYSTEM = """You are a player in a repeated game with {agents} players. Every round you are paired with a \
randomly chosen other player. You and your partner each choose, at the same time and without seeing the \
other's choice, one of two actions: C (cooperate) or D (defect).

Points per round:
- both choose C: you get {reward}, your partner gets {reward}
- you choose C, your partner D: you get {sucker}, your partner gets {temptation}
- you choose D, your partner C: you get {temptation}, your partner gets {sucker}
- both choose D: you get {punishment}, your partner gets {punishment}

Every player's reputation is public: how many of their last {window} moves were C. Other players see yours \
the same way. Your goal is to earn as many points as possible over all rounds."""

USER = """Round {round}.
{history}Your partner's reputation: {reputation}.
Which action do you choose? Answer with one letter, C or D."""

REMINDER = "Your answer must be exactly one letter: C (cooperate) or D (defect). Which action do you choose?"

_WORD = re.compile(r"\b(C|D|cooperate|defect)\b", re.IGNORECASE)
_ANSWER = {"c": COOPERATE, "cooperate": COOPERATE, "d": DEFECT, "defect": DEFECT}


class DilemmaCodec(Codec[DilemmaView]):
    """Messages, parsing, reminder, fallback and the store's encoding for one set of parameters."""

    def __init__(self, params: DilemmaParams) -> None:
        self.params = params

    def messages(self, situation: DilemmaView) -> tuple[Message, ...]:
        view = situation
        params = self.params
        system = SYSTEM.format(agents=params.agents, reward=params.reward, sucker=params.sucker,
                               temptation=params.temptation, punishment=params.punishment,
                               window=params.reputation_window)
        return (Message("system", system),
                Message("user", USER.format(round=view.round, history=self._history(view), reputation=self._reputation(view))))

    def _history(self, view: DilemmaView) -> str:
        if not view.history:
            return ""
        rounds = "\n".join(f"- you chose {play.own}, your partner chose {play.partner}: you got {play.payoff} points"
                           for play in view.history)
        return f"Your last {len(view.history)} round(s), oldest first:\n{rounds}\n"

    @staticmethod
    def _reputation(view: DilemmaView) -> str:
        record = view.partner_record
        if not record:
            return "no moves yet (this is their first round)"
        return f"C in {record.count(COOPERATE)} of their last {len(record)} moves"

    def parse(self, text: str, situation: DilemmaView) -> Parsed:
        """The one action a reply names (C, D, cooperate or defect, any case); a reply naming
        both or neither is unusable."""
        found = {_ANSWER[match.lower()] for match in _WORD.findall(text)}
        if len(found) == 1:
            return Parsed(found.pop())
        return Parsed(None, "names both actions" if found else "names no action")

    def reminder(self, situation: DilemmaView, parsed: Parsed) -> str:
        return REMINDER

    def fallback(self, situation: DilemmaView, unit: float) -> str:
        """The recorded move once re-asks are spent; `unit` is a uniform draw from the seed."""
        mode = self.params.fallback
        if mode == "cooperate":
            return COOPERATE
        if mode == "defect":
            return DEFECT
        return ACTIONS[int(unit * len(ACTIONS))]

    # --- the store ------------------------------------------------------------------------
    def encode(self, situation: DilemmaView) -> str:
        """`ROUND|OWN PARTNER ...|RECORD`, e.g. `7|CCDC|CCDCC`: payoffs follow from the parameters."""
        history = "".join(play.own + play.partner for play in situation.history)
        return f"{situation.round}|{history}|{''.join(situation.partner_record)}"

    def decode(self, context: str) -> DilemmaView:
        round_, history, record = context.split("|")
        plays = tuple(Play(history[i], history[i + 1], self.params.payoff(history[i], history[i + 1]))
                      for i in range(0, len(history), 2))
        return DilemmaView(int(round_), plays, tuple(record))
