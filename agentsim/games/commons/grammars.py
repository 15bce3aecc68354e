"""The commons' answers under constrained decoding (`constrained_decoding`), as GovSim decodes
them with its constraints (PathFinder; fishing/agents/persona_v3/cognition/act_prompts.py,
converse_prompts.py, store_prompts.py): a harvest is a whole number within the range the
prompt gives (0 to the stock), the utterance's conclusion is yes or no and the next speaker one
of the other villagers, a rating is 1 to 10, the framework model's agreed limit a number or N/A,
a reflection numbered insights.

A harvest and a rating are choice grammars (a finite set of replies, one per option, none a
prefix of another), so a backend that scores options (llama.cpp in process) reports and stores
each option's exact probability (llm/scoring.py). An utterance, the limit and a reflection
are regular expressions (an utterance's and an insight's words are free, only the format is
fixed: GovSim's numbered insights, one per statement at most; free text has no exact
distribution).

GovSim lets the model reason before it writes "Answer:" and constrains what follows; a grammar
holds the whole reply, so a constrained harvest or limit is the answer alone, in the words the
prompt asks for ("Answer: N tons").
"""

from __future__ import annotations

import re

from ...llm.base import Grammar
from .prompts import Words
from .situations import CommonsSituation

RATINGS = tuple(str(rating) for rating in range(1, 11))
# The agreed limit: GovSim reads digits after "Answer: " (reflect_prompts.py:144-155), or N/A.
LIMIT_PATTERN = "Answer: ([0-9]{1,4}|N/A)"


def harvest_replies(unit: str, stock: int) -> dict[str, str]:
    """Each amount from 0 to the stock, as the prompt's example writes it: "Answer: N tons"
    (the unit ends each reply, so that "Answer: 1 tons" does not begin "Answer: 10 tons")."""
    return {str(amount): f"Answer: {amount} {unit}" for amount in range(stock + 1)}


def rating_replies() -> dict[str, str]:
    """1 to 10 after the prompt's closing "Rating (1 to 10): ", each ending with a full stop
    ("1." does not begin "10.")."""
    return {rating: f"{rating}." for rating in RATINGS}


def utterance_pattern(others: tuple[str, ...]) -> str:
    """GovSim's output format: a free one-line response, the conclusion yes or no, and after
    "no" the next speaker among the other villagers. Plain groups and character classes only:
    llama.cpp translates no other regex syntax to GBNF."""
    names = "|".join(re.escape(name) for name in others)
    return rf"Response: [^\n]+\nConversation conclusion by me: (yes|no\nNext speaker: ({names}))"


def answer_grammar(situation: CommonsSituation, words: Words, max_insights: int) -> Grammar | None:
    """The grammar of this step's answer; None for the free-text steps."""
    if situation.kind == "harvest":
        return Grammar.choice(harvest_replies(words.unit, situation.stock))
    if situation.kind == "importance":
        return Grammar.choice(rating_replies())
    if situation.kind == "utterance":
        others = tuple(name for name in situation.participants if name != situation.name)
        return Grammar(kind="regex", value=utterance_pattern(others))
    if situation.kind == "limit":
        return Grammar(kind="regex", value=LIMIT_PATTERN)
    if situation.kind == "reflection" and situation.memories:
        return Grammar(kind="regex", value=reflection_pattern(min(max_insights, len(situation.memories))))
    return None


def reflection_pattern(lines: int) -> str:
    """GovSim's reflection: "1." then one insight per line, each next "N." optional, at most one
    per statement shown (reflect_prompts.py:32-60); the words are free."""
    pattern = ""
    for number in range(lines, 1, -1):
        pattern = rf"(\n{number}[.] [^\n]+{pattern})?"
    return rf"1[.] [^\n]+{pattern}"


def answer_options(situation: CommonsSituation) -> tuple[str, ...]:
    """The options a choice grammar's replies name, handed to backends that score them."""
    if situation.kind == "harvest":
        return tuple(str(amount) for amount in range(situation.stock + 1))
    if situation.kind == "importance":
        return RATINGS
    return ()
