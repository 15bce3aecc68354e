"""Reading replies: strategies, norms, donations and hunts. Each reads the reply alone and
says why it could not (the policy re-asks with a reminder, then records a fallback)."""

from __future__ import annotations

import re

from ...scenario import Parsed
from .prompts import STRATEGY_MARKER

# A number as written: "1,000" and "1,000.5" group thousands; "2,5" is a decimal comma; a minus
# sign is captured so that "-5" is read as the negative number it is (and refused), not as 5.
_NUMBER = r"(-?)\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?)"
_DONATION = re.compile(rf"^[^\w-]*{_NUMBER}")
_COSTLY = re.compile(rf"\b(donate|punish)\b[^\w-]*{_NUMBER}", re.IGNORECASE)
_HUNT = re.compile(r"\b(stag|hare)s?\b", re.IGNORECASE)


def parse_strategy(text: str) -> Parsed:
    """Everything from the first "My strategy will be" on, as Vallinder and Hughes keep it
    (`output.split("My strategy will be", 1)`)."""
    at = text.lower().find(STRATEGY_MARKER.lower())
    if at < 0:
        return Parsed(None, f"no sentence starting '{STRATEGY_MARKER}'")
    strategy = STRATEGY_MARKER + text[at + len(STRATEGY_MARKER):].rstrip()
    if len(strategy.strip()) <= len(STRATEGY_MARKER) + 1:
        return Parsed(None, "the strategy sentence is empty")
    return Parsed(strategy.strip())


def parse_norms(text: str, marker: str) -> Parsed:
    """What follows the marker ("My cultural norms are:" ...), its last occurrence."""
    at = text.lower().rfind(marker.lower())
    if at < 0:
        return Parsed(None, f"no list after '{marker}'")
    norms = text[at + len(marker):].strip()
    return Parsed(norms) if norms else Parsed(None, f"nothing after '{marker}'")


def answer_part(text: str) -> str | None:
    """What follows the first "Answer:" (Vallinder and Hughes's split)."""
    at = text.find("Answer:")
    return None if at < 0 else text[at + len("Answer:"):].strip()


# Vallinder and Hughes's readers (Donor_Game_with_Cultural_Evolution.ipynb:416, 423): a number
# opening the answer; "Donate" or "Punish" and the first number after it, a comma read as a point.
_NOTEBOOK_DONATION = re.compile(r"^\s*(\d+(?:\.\d+)?)")
_NOTEBOOK_COSTLY = re.compile(r"(donate|punish).*?(\d+(?:[.,]\d+)?)", re.IGNORECASE)


def parse_donation(text: str, resources: float, punishment: str, reader: str = "notebook") -> Parsed:
    """'donate X', 'punish X' or 'refuse'. `reader` "notebook" reads as Vallinder and Hughes's
    notebook does: "**3**" and "$4" are no number (re-asked), "Punish, x = 2" is punish 2, and
    an amount above `resources` is accepted (the game records it as an invalid action that
    moves nothing). "agentsim" reads markdown, currency signs and grouped thousands, refuses a
    negative amount and re-asks one above `resources`."""
    answer = answer_part(text)
    if answer is None:
        return Parsed(None, "no 'Answer:'")
    if reader == "notebook":
        return _notebook_donation(answer, punishment)
    if punishment == "partner_choice" and "refuse" in answer.lower():
        return Parsed("refuse")
    if punishment == "costly":
        match = _COSTLY.search(answer)
        if match is None:
            return Parsed(None, "the answer is not 'Donate, x' or 'Punish, x'")
        kind, sign, written = match.group(1).lower(), match.group(2), match.group(3)
    else:
        match = _DONATION.search(answer)
        if match is None:
            return Parsed(None, "the answer is not a number")
        kind, sign, written = "donate", match.group(1), match.group(2)
    amount = read_number(written)
    if sign:
        return Parsed(None, f"-{amount:g} is negative; give between 0 and {resources:g} units")
    if amount > resources + 1e-9:
        return Parsed(None, f"{amount:g} is more than the {resources:g} units the donor has")
    return Parsed(f"{kind} {amount:g}")


def _notebook_donation(answer: str, punishment: str) -> Parsed:
    if punishment == "partner_choice" and "refuse" in answer.lower():
        return Parsed("refuse")
    if punishment == "costly":
        match = _NOTEBOOK_COSTLY.search(answer)
        if match is None:
            return Parsed(None, "the answer is not 'Donate, x' or 'Punish, x'")
        return Parsed(f"{match.group(1).lower()} {float(match.group(2).replace(',', '.')):g}")
    match = _NOTEBOOK_DONATION.search(answer)
    if match is None:
        return Parsed(None, "the answer does not start with a number")
    return Parsed(f"donate {float(match.group(1)):g}")


def read_number(written: str) -> float:
    """A number as written: grouped thousands ("1,000" is 1000) or a decimal comma ("2,5" is 2.5)."""
    if "," in written and (written.count(",") > 1 or len(written.partition(",")[2].partition(".")[0]) == 3):
        return float(written.replace(",", ""))
    return float(written.replace(",", "."))


def parse_hunt(text: str) -> Parsed:
    """STAG or HARE after "Answer:"; an answer naming both is not a choice."""
    answer = answer_part(text)
    if answer is None:
        return Parsed(None, "no 'Answer:'")
    found = {match.group(1).upper() for match in _HUNT.finditer(answer.splitlines()[0] if answer else "")}
    if len(found) != 1:
        return Parsed(None, "the answer names neither STAG nor HARE" if not found else "the answer names both")
    return Parsed(found.pop())


def donation_amount(action: str) -> tuple[str, float]:
    """('donate' | 'punish' | 'refuse', units) of a parsed donation."""
    kind, _, amount = action.partition(" ")
    return kind, float(amount) if amount else 0.0
