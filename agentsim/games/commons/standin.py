"""The stand-in's rule for the commons' prompts: a documented, seeded villager that answers
in GovSim's formats. It is given the call's situation (`situations.CommonsSituation`: what
the prompt shows, nothing of the game's state beyond it) and reads numbers only where a
model would, in the words of its memories and of the conversation. Its dice come from the
request's seed. It is not an LLM and its results are not LLM results; it exists so that
every phase runs, and is recorded, without a key. Its settings (`naive_catch`,
`greedy_share`, `noise`, `invalid_rate`) are `CommonsStandInSettings`, the scenario's
`standin`.

Harvest ("how many ... this month?"), in this order:

1. the newcomer (its rules carry the outsider's goal) asks for `greedy_share` of the stock,
   whatever was agreed;
2. with the universalization sentence in its memories ("if everyone fishes more than T", "if
   each shepherd take more than T", ...), T;
3. with an agreed limit in its memories ("agreed on a maximum limit of L"), the latest L;
4. otherwise `naive_catch` (14 tons: more than a full lake's sustainable 10, so a group that
   never agrees on anything collapses the lake in its second month);

then, with probability `noise`, one more or one less; bounded by the stock. With probability
`invalid_rate` the reply has no number (a re-ask is answered the same way, so a fallback can
follow).

Utterance: the mayor's report gives the month's total catch and the stock line among its
memories (shown for the current month only) the stock before it, so it computes next month's
stock (the remainder doubled, up to capacity) and proposes each person's sustainable share of
it ("I propose we each take at most L next month"); when the stock line is not among the
memories it retrieved, it proposes the last agreed limit again (or the capacity's share). Once
a limit was proposed, it agrees with the first proposal. The newcomer refuses any limit. It
names as next speaker the first participant after itself who has not spoken yet (with
probability `noise`, another one of those), and concludes the conversation when everyone has
spoken.

Limit extraction: the first proposed limit if someone agreed with it, else N/A.
Reflection: insights from its memories (the agreed limit, the stock it last saw, the
universalization sentence), citing their numbers. Importance (asked of conversations and
insights only, as GovSim asks): 6 for a conversation; for an insight 8 if it names an agreement
or a limit, 7 if it names the stock, 4 otherwise; with probability `noise` one point more.

So the conditions differ on the stand-in as the paper reports of capable models: with
communication the group settles on a sustainable limit after the first month and survives;
without it the lake collapses in month 2; universalization makes every harvest sustainable
from the first month; a newcomer takes far more than the others and lowers equality.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ...llm.base import Request
from ...params import StandInSettings, require
from ...seeding import unit_uniforms
from .situations import CommonsSituation

_UNIVERSAL = re.compile(r"if (?:everyone|each [a-z ]+?) \w+ more than (\d+)")
_LIMIT = re.compile(r"agreed on a maximum limit of (\d+)")
_STOCK = re.compile(r"Before [^,]*, \D*?(\d+)\b")
_PROPOSAL = re.compile(r"at most (\d+)")
_AGREEMENT = re.compile(r"I agree with (\d+)")
_NUMBER = re.compile(r"\b(\d+)\b")


@dataclass(frozen=True, kw_only=True)
class CommonsStandInSettings(StandInSettings):
    """The commons stand-in's rule; `--set standin.invalid_rate=0.3`."""

    naive_catch: int = 14  # what an agent with no limit and no threshold in mind asks for
    greedy_share: float = 0.3  # the newcomer's share of the stock
    noise: float = 0.1  # chance of one ton more or less than the rule says
    invalid_rate: float = 0.0  # chance of a harvest reply with no number in it

    def validate(self) -> None:
        require(self.naive_catch >= 0, f"standin.naive_catch must be >= 0 (got {self.naive_catch})")
        self.require_rates("greedy_share", "noise", "invalid_rate")


class CommonsStandIn:
    def __init__(self, settings: CommonsStandInSettings = CommonsStandInSettings(), *, capacity: int = 100,
                 unit: str = "tons") -> None:
        """`capacity` and `unit` are what every system prompt and answer format of the game
        show (the resource's carrying capacity, and its unit as in "Answer: N tons")."""
        self.settings = settings
        self.capacity = capacity
        self.unit = unit

    def answer(self, request: Request) -> str | None:
        situation = request.situation
        if not isinstance(situation, CommonsSituation):
            return None  # another game's request
        dice = unit_uniforms(request.seed or 0, 3)
        kind = situation.kind
        if kind == "limit":
            return self.limit(situation.conversation)
        if kind == "harvest":
            return self.harvest(situation, dice)
        if kind == "utterance":
            return self.utterance(situation, dice)
        if kind == "reflection":
            return self.reflection(situation.memories)
        return self.importance(situation, dice)

    def harvest(self, situation: CommonsSituation, dice: list[float]) -> str:
        settings, stock, unit = self.settings, situation.stock, self.unit
        if dice[0] < settings.invalid_rate:
            return "I will go out early and see how the day goes."
        remembered = _texts(situation.memories)
        universal, limit = _last(_UNIVERSAL, remembered), _last(_LIMIT, remembered)
        if situation.greedy:
            amount, why = math.ceil(settings.greedy_share * stock), "I want to grow my business"
        elif universal is not None:
            amount, why = universal, "if everyone takes more than that, the stock shrinks"
        elif limit is not None:
            amount, why = limit, "that is what we agreed"
        else:
            amount, why = settings.naive_catch, "that seems a fair catch"
        if dice[1] < settings.noise:
            amount += 1 if dice[2] < 0.5 else -1
        amount = min(max(amount, 0), stock)
        return f"There are {stock} {unit} available, and {why}. Answer: {amount} {unit}."

    def utterance(self, situation: CommonsSituation, dice: list[float]) -> str:
        name, participants, conversation = situation.name, list(situation.participants), situation.conversation
        spoken = {speaker for speaker, _ in conversation} | {name}
        proposals = _numbers(_PROPOSAL, conversation)
        if situation.greedy:
            said = "I have a business to grow; I will take what I need and I won't commit to a limit."
        elif proposals:
            said = f"I agree with {proposals[0]} each; let's all keep to it."
        else:
            said = f"I propose we each take at most {self.proposal(situation)} next month."
        position = participants.index(name) if name in participants else 0
        waiting = [other for other in participants[position + 1:] + participants[:position] if other not in spoken]
        if not waiting:
            return f"Response: {said}\nConversation conclusion by me: yes\n"
        following = waiting[int(dice[2] * len(waiting))] if dice[1] < self.settings.noise else waiting[0]
        return f"Response: {said}\nConversation conclusion by me: no\nNext speaker: {following}\n"

    def proposal(self, situation: CommonsSituation) -> int:
        """Each person's sustainable share of next month's stock, from this month's stock (in
        its memories) and the mayor's report of the catch; else the last agreed limit."""
        people = max(len(situation.participants), 1)
        stock = _last(_STOCK, _texts(situation.memories))
        if stock is None:  # this month's stock is not among its memories: the last agreed limit
            agreed = _last(_LIMIT, _texts(situation.memories + situation.conversation))
            return agreed if agreed is not None else self.capacity // (2 * people)
        report = situation.conversation[0][1] if situation.conversation else ""
        taken = sum(int(number) for number in _NUMBER.findall(report))
        return min(self.capacity, 2 * max(stock - taken, 0)) // (2 * people)

    @staticmethod
    def limit(conversation: tuple[tuple[str, str], ...]) -> str:
        proposals = _numbers(_PROPOSAL, conversation)
        agreed = set(_numbers(_AGREEMENT, conversation))
        if proposals and proposals[0] in agreed:
            return f"Someone proposed {proposals[0]} per person and others agreed. Answer: {proposals[0]}"
        return "Nobody agreed on a number. Answer: N/A"

    @staticmethod
    def reflection(memories: tuple[tuple[str, str], ...]) -> str:
        insights: list[str] = []
        for number, (_, text) in reversed(list(enumerate(memories, start=1))):
            limit, stock, universal = _LIMIT.search(text), _STOCK.search(text), _UNIVERSAL.search(text)
            if limit and not any("limit" in insight for insight in insights):
                insights.append(f"We agreed on a limit of {limit.group(1)} per person, and keeping to it protects"
                                f" our income (because of {number})")
            elif stock and not any("stock" in insight for insight in insights):
                insights.append(f"The stock stood at {stock.group(1)} when we last took our share (because of {number})")
            elif universal and not any("everyone" in insight for insight in insights):
                insights.append(f"If everyone takes more than {universal.group(1)}, the stock shrinks (because of {number})")
        if not insights:
            insights.append("I should watch how much everyone takes (because of 1)")
        return "\n".join(f"{index + 1}. {insight}" for index, insight in enumerate(insights))

    def importance(self, situation: CommonsSituation, dice: list[float]) -> str:
        memory = situation.memory
        if situation.memory_kind == "chat":
            rating = 6
        elif "agreed" in memory or "limit" in memory:
            rating = 8
        elif "stock" in memory:
            rating = 7
        else:
            rating = 4
        return f"Rating: {min(rating + (dice[1] < self.settings.noise), 10)}"


def _texts(pairs: Iterable[tuple[str, str]]) -> str:
    """The words of (date, memory) or (speaker, utterance) pairs, one a line, in order."""
    return "\n".join(text for _, text in pairs)


def _last(pattern: re.Pattern[str], text: str) -> int | None:
    found = pattern.findall(text)
    return int(found[-1]) if found else None


def _numbers(pattern: re.Pattern[str], conversation: tuple[tuple[str, str], ...]) -> list[int]:
    """The number `pattern` finds first in each utterance that has one, in order."""
    return [int(match.group(1)) for _, said in conversation for match in [pattern.search(said)] if match]
