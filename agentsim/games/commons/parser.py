"""Reading the agents' replies, one reader per prompt kind. A reader returns the action as
text (what the store keeps as the parsed action) or the problem that makes the reply
unusable; the policy then re-asks with the kind's reminder and, once re-asks are spent,
records a fallback (`CommonsGame.salvage` / `fallback`)."""

from __future__ import annotations

import json
import re

from ...scenario import Parsed

_ANSWER = re.compile(r"(?:\*\*answer\*\*\s*:|answer\s*:|so, the answer is\s*:)", re.IGNORECASE)
_INTEGER = re.compile(r"-?\d+")
_AMOUNT = re.compile(r"(-?)\s*(\d{1,3}(?:,\d{3})+(?!\d)|\d+)")  # "1,000" is one thousand
_RATING = re.compile(r"rating(?:\s*\(1 to 10\))?\s*:", re.IGNORECASE)
_CONCLUSION = re.compile(r"conversation conclusion by me\s*:", re.IGNORECASE)
_NEXT = re.compile(r"next speaker\s*:", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*(?:\d+[.)]|[-*])\s*(.+?)\s*$")
_LIST_NUMBER = re.compile(r"^([ \t]*)\d+[.)][ \t]+(?=\S)", re.MULTILINE)  # "1. " opening a list item
_BECAUSE = re.compile(r"\s*\((?:because of|because)[^)]*\)?\s*$", re.IGNORECASE)
_NOT_AVAILABLE = re.compile(r"\b(?:n/?a|none|no limit|no agreement)\b", re.IGNORECASE)


def _after_answer(text: str) -> str | None:
    """The text after the first "Answer:" marker, where GovSim's stop regex ends the
    reasoning (act_prompts.py), or None."""
    marker = _ANSWER.search(text)
    return text[marker.end():] if marker else None


def parse_harvest(text: str) -> Parsed:
    """The first whole number after "Answer:", as GovSim reads it (a digits regex),
    whatever the stock: an amount above it is what the agent asked for, and the environment
    hands out what there is. A negative number is no amount (GovSim's regex would drop the
    sign and read -5 as 5)."""
    answer = _after_answer(text)
    if answer is None:
        return Parsed(None, 'no "Answer:" in the reply')
    number = _AMOUNT.search(answer)
    if number is None:
        return Parsed(None, 'no number after "Answer:"')
    amount = int(number.group(2).replace(",", ""))
    if number.group(1):
        return Parsed(None, f"-{amount} is negative: the amount is a whole number from 0 up")
    return Parsed(str(amount))


def utterance_action(say: str, end: bool, next_speaker: str | None) -> str:
    return json.dumps({"say": say, "end": end, "next": next_speaker}, ensure_ascii=False)


def read_utterance(action: str) -> tuple[str, bool, str | None]:
    fields = json.loads(action)
    return fields["say"], bool(fields["end"]), fields["next"]


def _spoken(text: str) -> str:
    said = text.strip()
    if said.lower().startswith("response:"):
        said = said[len("response:"):].strip()
    if len(said) > 1 and said[0] == said[-1] == '"':
        said = said[1:-1].strip()
    return said


def parse_utterance(text: str, speaker: str, participants: tuple[str, ...]) -> Parsed:
    """GovSim's output format: Response / Conversation conclusion by me / Next speaker."""
    conclusion = _CONCLUSION.search(text)
    if conclusion is None:
        return Parsed(None, 'no "Conversation conclusion by me:" line')
    said = _spoken(text[:conclusion.start()])
    if not said:
        return Parsed(None, "no response before the conclusion line")
    rest = text[conclusion.end():]
    verdict = re.match(r"\s*\**\s*(yes|no)\b", rest, re.IGNORECASE)
    if verdict is None:
        return Parsed(None, "the conclusion is neither yes nor no")
    if verdict.group(1).lower() == "yes":
        return Parsed(utterance_action(said, True, None))
    following = _NEXT.search(rest)
    others = [name for name in participants if name != speaker]
    if following is None:
        return Parsed(None, 'no "Next speaker:" line')
    named = rest[following.end():].strip().split("\n")[0]
    for name in others:
        if re.search(rf"\b{re.escape(name)}\b", named, re.IGNORECASE):
            return Parsed(utterance_action(said, False, name))
    return Parsed(None, f"the next speaker is none of {', '.join(others)}")


def salvage_utterance(text: str) -> str | None:
    """What was said, ending the conversation, when the format could not be read."""
    conclusion = _CONCLUSION.search(text)
    said = _spoken(text[:conclusion.start()] if conclusion else text)
    return utterance_action(said, True, None) if said else None


def parse_limit(text: str) -> Parsed:
    """A number per person, or "none" (N/A: no agreement)."""
    answer = _after_answer(text)
    if answer is None:
        return Parsed(None, 'no "Answer:" in the reply')
    number = _INTEGER.search(answer)
    not_available = _NOT_AVAILABLE.search(answer)
    if not_available is not None and (number is None or not_available.start() < number.start()):
        return Parsed("none")
    if number is None or int(number.group()) < 0:
        return Parsed(None, 'neither a number nor N/A after "Answer:"')
    return Parsed(str(int(number.group())))


def parse_reflection(text: str, max_insights: int) -> Parsed:
    insights = []
    for line in text.splitlines():
        match = _NUMBERED.match(line)
        if match:
            insight = _BECAUSE.sub("", match.group(1)).strip()
            if insight:
                insights.append(insight)
    if not insights:
        return Parsed(None, "no numbered insight")
    return Parsed(json.dumps(insights[:max_insights], ensure_ascii=False))


def parse_importance(text: str) -> Parsed:
    """The number after "Rating (1 to 10):" or "Rating:"; without the marker, the reply's
    first number that is not a list item's ("1. 10: The conversation is highly impactful" is
    10): GovSim writes the marker itself and lets the model choose only among 1-10 after it
    (store_prompts.py), so a list's numbering is never its rating."""
    marker = _RATING.search(text)
    number = _INTEGER.search(text[marker.end():] if marker else _LIST_NUMBER.sub(r"\1", text))
    if number is None or not 1 <= int(number.group()) <= 10:
        return Parsed(None, "no rating from 1 to 10")
    return Parsed(number.group())
