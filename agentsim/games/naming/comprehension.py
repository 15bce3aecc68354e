"""Comprehension questions about a naming-game prompt (Flint Ashery et al. 2025, Table S7).

The paper checks that a model understood its prompt by asking, at recorded states of a real
run, questions whose answers follow from the prompt alone: the payoff bounds, the allowed
actions, the payoff of a pair of actions, the current round, the action and points of round
i, how often an action was chosen, and the total payoff. `questions_for` writes them for one
situation with their true answers; `score` reads a reply against a truth; `ComprehensionStandIn`
is the stand-in's rule for them: it reads the prompt like any model must and answers right
except at a per-question error rate (counting errs most, as the paper saw in Llama-2).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...llm.base import Message, Request
from ...prompts import PromptTemplate
from ...seeding import unit_uniforms
from .standin import read_options

# kind -> (the question as asked of Player 1's prompt, Table S7 group)
QUESTIONS: dict[str, tuple[str, str]] = {
    "min_payoff": ("What is the lowest payoff Player 1 can get in a single round?", "rules"),
    "max_payoff": ("What is the highest payoff Player 1 can get in a single round?", "rules"),
    "actions": ("Which actions is Player 1 allowed to play?", "rules"),
    "payoff": ("Which is Player 1's payoff in a single round if Player 1 plays {p} and Player 2 plays {q}?", "rules"),
    "round": ("Which is the current round of the game?", "time"),
    "action_i": ("Which action did Player 1 play in round {i}?", "time"),
    "points_i": ("How many points did Player 1 collect in round {i}?", "time"),
    "count_actions": ("How many times did Player 1 choose {p}?", "state"),
    "total_points": ("What is Player 1's current total payoff?", "state"),
}
ANSWER_FORMAT = "Answer only with the answer, in this format: {'answer': <ANSWER>}."
MARKER = "Comprehension question: "

# The stand-in's error rates: near-perfect on rules, worst at counting (Fig. S1).
STANDIN_ERROR_RATES: dict[str, float] = {
    "min_payoff": 0.02, "max_payoff": 0.02, "actions": 0.02, "payoff": 0.05, "round": 0.05,
    "action_i": 0.08, "points_i": 0.08, "count_actions": 0.2, "total_points": 0.12,
}


@dataclass(frozen=True)
class Question:
    kind: str
    text: str
    truth: str  # a number, a name, or names joined by ", " (sorted) for `actions`


def questions_for(options: Sequence[str], memory: Sequence[tuple[Any, ...]], *, success_payoff: int,
                  failure_payoff: int, payoff: Any, rng: random.Random) -> list[Question]:
    """Every Table S7 question that can be asked of this situation, with its true answer.
    Memory questions need a memory; `i` and the actions asked about are drawn from `rng`."""
    names = sorted(options)
    found = [
        Question("min_payoff", QUESTIONS["min_payoff"][0], str(min(success_payoff, failure_payoff))),
        Question("max_payoff", QUESTIONS["max_payoff"][0], str(max(success_payoff, failure_payoff))),
        Question("actions", QUESTIONS["actions"][0], ", ".join(names)),
    ]
    p, q = rng.choice(names), rng.choice(names)
    found.append(Question("payoff", QUESTIONS["payoff"][0].format(p=p, q=q), str(payoff(p, q))))
    found.append(Question("round", QUESTIONS["round"][0], str(len(memory) + 1)))
    if memory:
        i = rng.randrange(1, len(memory) + 1)
        own, _, points = memory[i - 1][:3]
        found.append(Question("action_i", QUESTIONS["action_i"][0].format(i=i), str(own)))
        found.append(Question("points_i", QUESTIONS["points_i"][0].format(i=i), str(points)))
        p = rng.choice(names)
        found.append(Question("count_actions", QUESTIONS["count_actions"][0].format(p=p),
                              str(sum(1 for entry in memory if entry[0] == p))))
        found.append(Question("total_points", QUESTIONS["total_points"][0], str(sum(entry[2] for entry in memory))))
    return found


def question_messages(game_messages: Sequence[Message], question: Question) -> tuple[Message, ...]:
    """The game's system prompt, then the question in place of the request for an action."""
    return (game_messages[0], Message("user", f"{MARKER}{question.text} {ANSWER_FORMAT}"))


_ANSWER = re.compile(r"""['"]?answer['"]?\s*:\s*([^}]*)""", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?\d+")


def read_answer(reply: str) -> str:
    """The answer field of a reply (or the whole reply), stripped."""
    match = _ANSWER.search(reply)
    return (match.group(1) if match else reply).strip().strip("'\"<>[]{}. ")


def score(question: Question, reply: str, options: Sequence[str]) -> bool:
    """Whether `reply` answers `question` correctly: numbers compared as integers, names as
    exact whole words, the allowed actions as a set."""
    answer = read_answer(reply)
    if question.kind in ("min_payoff", "max_payoff", "payoff", "round", "points_i", "count_actions", "total_points"):
        numbers = _NUMBER.findall(answer)
        return len(numbers) >= 1 and int(numbers[0]) == int(question.truth)
    found = {name for name in options if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", answer)}
    if question.kind == "actions":
        return found == set(question.truth.split(", "))
    return found == {question.truth}


class ComprehensionStandIn:
    """The stand-in's rule for comprehension questions: it reads the system prompt with the
    naming templates (options, payoffs, history), computes the true answer, and gives a
    plausible wrong one with the question's error rate (dice from the request's seed)."""

    def __init__(self, templates: Sequence[PromptTemplate], *, error_rates: Mapping[str, float] | None = None) -> None:
        self.templates = list(templates)
        self.error_rates = dict(STANDIN_ERROR_RATES if error_rates is None else error_rates)
        self._patterns = [(kind, re.compile("^" + re.escape(text).replace(r"\{p\}", "(?P<p>.+?)")
                                            .replace(r"\{q\}", "(?P<q>.+?)").replace(r"\{i\}", r"(?P<i>\d+)") + "$"))
                          for kind, (text, _) in QUESTIONS.items()]

    def answer(self, request: Request) -> str | None:
        messages = request.messages
        if len(messages) < 2 or not messages[-1].content.startswith(MARKER) or messages[0].role != "system":
            return None
        question = messages[-1].content[len(MARKER):].removesuffix(" " + ANSWER_FORMAT)
        for template in self.templates:
            fields = template.read("system", messages[0].content)
            if fields is not None:
                break
        else:
            return None
        options = read_options(fields)
        entries = template.findall("entry", fields.get("history") or "", "own", "partner", "payoff")
        memory = [(own, partner, int(points)) for own, partner, points in entries]
        success = int(fields.get("success_payoff", "100"))
        failure = int(fields.get("failure_payoff", "-50"))
        asked = next(((kind, match) for kind, pattern in self._patterns if (match := pattern.match(question))), None)
        if asked is None:
            return "{'answer': I do not know}"
        kind, match = asked
        truth = _true_answer(kind, match.groupdict(), options, memory, success, failure)
        error_die, pick_die = unit_uniforms(request.seed or 0, 2)
        if error_die < self.error_rates.get(kind, 0.0):
            truth = _wrong(kind, truth, options, pick_die)
        return f"{{'answer': {truth}}}"



def _true_answer(kind: str, values: Mapping[str, str], options: Sequence[str], memory: Sequence[tuple[str, str, int]],
                 success: int, failure: int) -> str:
    if kind == "min_payoff":
        return str(min(success, failure))
    if kind == "max_payoff":
        return str(max(success, failure))
    if kind == "actions":
        return ", ".join(sorted(options))
    if kind == "payoff":
        return str(success if values["p"] == values["q"] else failure)
    if kind == "round":
        return str(len(memory) + 1)
    if kind in ("action_i", "points_i"):
        entry = memory[int(values["i"]) - 1]
        return str(entry[0] if kind == "action_i" else entry[2])
    if kind == "count_actions":
        return str(sum(1 for entry in memory if entry[0] == values["p"]))
    return str(sum(entry[2] for entry in memory))


def _wrong(kind: str, truth: str, options: Sequence[str], die: float) -> str:
    if kind == "action_i":
        others = [name for name in options if name != truth] or list(options)
        return others[int(die * len(others)) % len(others)]
    if kind == "actions":
        return sorted(options)[0]
    step = 50 if kind in ("min_payoff", "max_payoff", "payoff", "points_i", "total_points") else 1
    return str(int(truth) + (step if die < 0.5 else -step))
