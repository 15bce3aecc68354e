"""The stand-in's rule for the commons' prompts: a documented, seeded villager that reads each
prompt as a model would (it never sees the game's state) and answers in GovSim's formats.
Its dice come from the request's seed. It is not an LLM and its results are not LLM results;
it exists so that every phase runs, and is recorded, without a key.

Harvest ("how many ... would you catch this month?"), in this order:

1. the newcomer (its system prompt carries the greedy goal) asks for `greedy_share` of the
   stock, whatever was agreed;
2. with the universalization sentence in its memories ("if everyone fishes more than T"), T;
3. with an agreed limit in its memories ("agreed on a maximum limit of L"), L;
4. otherwise `naive_catch` (14 tons: more than a full lake's sustainable 10, so a group that
   never agrees on anything collapses the lake in its second month);

then, with probability `noise`, one more or one less; bounded by the stock. With probability
`invalid_rate` the reply has no number (a re-ask is answered the same way, so a fallback can
follow).

Utterance: the mayor's report gives the month's total catch and the agent's memories of
today the stock before it, so it computes next month's stock (the remainder doubled, up to
capacity) and proposes each person's sustainable share of it ("I propose we each take at
most L next month"); when today's harvest is not among the memories it retrieved, it
proposes the last agreed limit again (or the capacity's share). Once a limit was proposed,
it agrees with the first proposal. The newcomer
refuses any limit. It names as next speaker the first participant after itself who has not
spoken yet (with probability `noise`, another one of those), and concludes the conversation
when everyone has spoken.

Limit extraction: the first proposed limit if someone agreed with it, else N/A.
Reflection: insights from its memories (the agreed limit, the stock it last saw, the
universalization sentence), citing their numbers. Importance: 8 for an agreement or a
limit, 6 for a conversation, 7 for the stock seen or a harvest (9 if it got less than it
wanted), 4 otherwise,
with probability `noise` one point more.

So the conditions differ on the stand-in as the paper reports of capable models: with
communication the group settles on a sustainable limit after the first month and survives;
without it the lake collapses in month 2; universalization makes every harvest sustainable
from the first month; a newcomer takes far more than the others and lowers equality.
"""

from __future__ import annotations

import math
import re

from ...llm.base import Request
from ...seeding import unit_uniforms

_RANGE = re.compile(r"range set between 0-(\d+)")
_UNIT = re.compile(r"example Answer: N (\w+)")
_OTHERS = re.compile(r"along with (\w+) other")
_CAPACITY = re.compile(r"between 0 and (\d+)")
_NAME = re.compile(r"You are (\w+),")
_UNIVERSAL = re.compile(r"if everyone \w+ more than (\d+)")
_LIMIT = re.compile(r"agreed on a maximum limit of (\d+)")
_STOCK = re.compile(r"Before [^,]*, \D*?(\d+) ")
_PROPOSAL = re.compile(r"at most (\d+)")
_AGREEMENT = re.compile(r"I agree with (\d+)")
_PARTICIPANTS = re.compile(r"Scenario: (.+) are engaged in a group chat\.")
_GREEDY = "you just want to make money"
_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")


class CommonsStandIn:
    def __init__(self, *, naive_catch: int = 14, greedy_share: float = 0.3, noise: float = 0.1,
                 invalid_rate: float = 0.0) -> None:
        self.naive_catch = naive_catch
        self.greedy_share = greedy_share
        self.noise = noise
        self.invalid_rate = invalid_rate

    def answer(self, request: Request) -> str | None:
        messages = request.messages
        system = messages[0].content if messages[0].role == "system" else ""
        user = messages[0].content if messages[0].role == "user" else (messages[1].content if len(messages) > 1 else "")
        dice = unit_uniforms(request.seed or 0, 3)
        if "Determine whether there was an explicit agreement" in user:
            return self.limit(user)
        if "You are " not in system:
            return None
        if "range set between 0-" in user:
            return self.harvest(system, user, dice)
        if "Output format:\nResponse:" in user:
            return self.utterance(system, user, dice)
        if "What high-level insights" in user:
            return self.reflection(user)
        if "rate the likely poignancy" in user:
            return self.importance(user, dice)
        return None

    def harvest(self, system: str, user: str, dice: list[float]) -> str:
        stock = int(_RANGE.search(user).group(1))  # type: ignore[union-attr]
        unit = (_UNIT.search(user) or _fallback_unit).group(1)
        if dice[0] < self.invalid_rate:
            return "I will go out early and see how the day goes."
        universal, limit = _last(_UNIVERSAL, user), _last(_LIMIT, user)
        if _GREEDY in system:
            amount, why = math.ceil(self.greedy_share * stock), "I want to grow my business"
        elif universal is not None:
            amount, why = universal, "if everyone takes more than that, the stock shrinks"
        elif limit is not None:
            amount, why = limit, "that is what we agreed"
        else:
            amount, why = self.naive_catch, "that seems a fair catch"
        if dice[1] < self.noise:
            amount += 1 if dice[2] < 0.5 else -1
        amount = min(max(amount, 0), stock)
        return f"There are {stock} {unit} available, and {why}. Answer: {amount} {unit}."

    def utterance(self, system: str, user: str, dice: list[float]) -> str:
        name = _NAME.search(system).group(1)  # type: ignore[union-attr]
        participants = _split_names(_PARTICIPANTS.search(user).group(1))  # type: ignore[union-attr]
        conversation = _conversation(user)
        spoken = {speaker for speaker, _ in conversation} | {name}
        proposals = [int(match.group(1)) for _, text in conversation for match in [_PROPOSAL.search(text)] if match]
        if _GREEDY in system:
            said = "I have a business to grow; I will take what I need and I won't commit to a limit."
        elif proposals:
            said = f"I agree with {proposals[0]} each; let's all keep to it."
        else:
            said = f"I propose we each take at most {self.proposal(system, user, conversation, len(participants))} next month."
        position = participants.index(name) if name in participants else 0
        waiting = [other for other in participants[position + 1:] + participants[:position] if other not in spoken]
        if not waiting:
            return f"Response: {said}\nConversation conclusion by me: yes\n"
        following = waiting[int(dice[2] * len(waiting))] if dice[1] < self.noise else waiting[0]
        return f"Response: {said}\nConversation conclusion by me: no\nNext speaker: {following}\n"

    @staticmethod
    def proposal(system: str, user: str, conversation: list[tuple[str, str]], people: int) -> int:
        capacity = int(_CAPACITY.search(system).group(1))  # type: ignore[union-attr]
        date = re.search(r"^Date: (\S+)$", user, re.MULTILINE)
        today = [line for line in user.splitlines() if date and line.startswith(f"- {date.group(1)}: ")]
        stock = _last(_STOCK, "\n".join(today))
        if stock is None:  # this month's harvest is not among its memories: the last agreed limit
            agreed = _last(_LIMIT, user)
            return agreed if agreed is not None else capacity // (2 * max(people, 1))
        report = conversation[0][1] if conversation else ""
        taken = sum(int(number) for number in re.findall(r"\b(\d+)\b", report))
        return min(capacity, 2 * max(stock - taken, 0)) // (2 * max(people, 1))

    @staticmethod
    def limit(user: str) -> str:
        conversation = _conversation(user)
        proposals = [int(match.group(1)) for _, text in conversation for match in [_PROPOSAL.search(text)] if match]
        agreed = {int(match.group(1)) for _, text in conversation for match in [_AGREEMENT.search(text)] if match}
        if proposals and proposals[0] in agreed:
            return f"Someone proposed {proposals[0]} per person and others agreed. Answer: {proposals[0]}"
        return "Nobody agreed on a number. Answer: N/A"

    @staticmethod
    def reflection(user: str) -> str:
        memories = re.findall(r"^(\d+)\) [\d-]+: (.*)$", user, re.MULTILINE)
        insights: list[str] = []
        for number, text in reversed(memories):
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

    def importance(self, user: str, dice: list[float]) -> str:
        memory = user.split("Memory: ", 1)[-1].split("\nRating:", 1)[0]
        if "agreed" in memory or "limit" in memory:
            rating = 8
        elif memory.startswith("Conversation"):
            rating = 6
        elif "wanted to" in memory:
            amounts = [int(number) for number in re.findall(r"\b(\d+)\b", memory)]
            rating = 9 if len(amounts) >= 2 and amounts[-1] < amounts[-2] else 7
        elif memory.startswith("Before "):
            rating = 7
        else:
            rating = 4
        return f"Rating: {min(rating + (dice[1] < self.noise), 10)}"


class _fallback_unit:
    @staticmethod
    def group(number: int) -> str:
        return "units"


def _last(pattern: re.Pattern[str], text: str) -> int | None:
    found = pattern.findall(text)
    return int(found[-1]) if found else None


def _split_names(text: str) -> list[str]:
    return [name.strip() for name in re.split(r",\s*(?:and\s+)?|\s+and\s+", text) if name.strip()]


def _conversation(user: str) -> list[tuple[str, str]]:
    """The "-Speaker: utterance" lines of a prompt's conversation."""
    block = user.split("Conversation so far:\n", 1)[-1] if "Conversation so far:\n" in user else user.split("Conversation:\n", 1)[-1]
    lines = []
    for line in block.split("\n\n", 1)[0].splitlines():
        match = re.match(r"^-(\w+): (.*)$", line)
        if match and match.group(1) != "Mayor":
            lines.append((match.group(1), match.group(2)))
        elif match:
            lines.append(("Mayor", match.group(2)))
    return lines
