"""Comprehension checks (Fig. S1): Table S7's questions asked at recorded states of a real run.

Agents are drawn (seeded) from one recorded run; at every decision they took, the prompt they
saw is rebuilt from the store and each question that state allows is asked of the backend,
concurrently (or, with `batch`, through the provider's batch API first, at half price:
agentsim/batch_run.py); replies are scored against the true game state. The result is each
question's accuracy with a Wilson interval and what the questions cost, saved beside the run for
the report, and every question and reply as CSV.
"""

from __future__ import annotations

import asyncio
import csv
import random
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import event_loop
from ...analysis.recorded import ANALYSIS_DIR, RecordedExperiment, save_artifact
from ...analysis.stats import proportion_interval
from ...errors import BackendError, BackendFailedError, UserError
from ...llm.accounting import AccountedModel
from ...llm.base import LanguageModel, Request, Sampling
from ...llm.providers import STAND_IN, is_stand_in
from ...llm.retries import RetryPolicy
from ...llm.specs import BackendOptions, build_backend
from ...llm.stack import layer
from ...llm.standin import StandInModel
from ...params import require
from ...prompts import PromptTemplate
from ...secrets import redact
from ...seeding import derive_seed
from . import QUESTIONS, ComprehensionStandIn, NamingGame, NamingSituation, question_messages, questions_for, score
from . import recorded as naming_record

ARTIFACT = "comprehension"


@dataclass(frozen=True, kw_only=True)
class ComprehensionCheck:
    agents: int = 8  # the paper: 8 agents of one run (5 for Llama-3-70B-Instruct)
    run: int = 1
    max_states: int = 200  # at most this many recorded decisions are questioned
    backend: str = ""  # empty: the backend the run used
    seed: int = 0
    concurrency: int = 16
    max_tokens: int = 24
    # the questions through the provider's batch API first, at half price (--batch; openai:, anthropic:)
    batch: bool = False
    batch_poll_s: float = 30.0

    def __post_init__(self) -> None:
        require(self.agents >= 1, f"agents must be at least 1 (got {self.agents})")
        require(self.max_states >= 1, f"max_states must be at least 1 (got {self.max_states})")
        require(self.concurrency >= 1, f"concurrency must be at least 1 (got {self.concurrency})")


def comprehension_backend(spec: str, scenario: NamingGame, options: BackendOptions | None = None) -> LanguageModel:
    """The stand-in answers with the comprehension rule; any other spec is built as usual."""
    if is_stand_in(spec):
        templates = [scenario.template] + [PromptTemplate.load("naming", variant)
                                           for variant in ("standard", "narrative", "bullet") if variant != scenario.template.name]
        return StandInModel([ComprehensionStandIn(templates)])
    return build_backend(spec, options, rules=scenario.standin_part().rules)


def _progress(line: str) -> None:
    print(f"comprehension: {line}", file=sys.stderr, flush=True)


def check(directory: Path | str, check: ComprehensionCheck = ComprehensionCheck(),
          progress: Callable[[str], None] = _progress) -> dict[str, Any]:
    """Question agents of a recorded run; save and return per-question accuracy (`progress`:
    where a batch's progress goes while it is waited for)."""
    experiment = RecordedExperiment(Path(directory))
    try:
        scenario = experiment.scenario
        if not isinstance(scenario, NamingGame):
            raise UserError(f"{directory} holds no naming-game run to question; give the directory of a naming-game run")
        choices = [choice for choice in naming_record.choices(experiment) if choice.run == check.run]
        if not choices:
            raise UserError(f"{directory} holds no finished run {check.run} with LLM decisions; pick another --run")
    finally:
        experiment.close()
    rng = random.Random(check.seed)
    agents = sorted({choice.agent for choice in choices})
    chosen = set(rng.sample(agents, min(check.agents, len(agents))))
    states = [choice for choice in choices if choice.agent in chosen][: check.max_states]
    params = scenario.params
    asked = []
    for choice in states:
        game_messages = scenario.codec.messages(NamingSituation(choice.options, choice.memory))
        for question in questions_for(choice.options, choice.memory, success_payoff=params.success_payoff,
                                      failure_payoff=params.failure_payoff, payoff=scenario.payoff, rng=rng):
            asked.append((choice, question, question_messages(game_messages, question)))
    backend_spec = check.backend or experiment.backend or STAND_IN
    if check.batch:
        from ...batch_run import require_batch_backend  # lazy: the batch APIs (aiohttp), only with --batch

        require_batch_backend([backend_spec])
    backend = comprehension_backend(backend_spec, scenario, BackendOptions(batch=check.batch,
                                                                           batch_poll_s=check.batch_poll_s))
    accounted = layer(backend, AccountedModel)
    replies = event_loop.run(_ask(backend, asked, check, progress))
    rows = []
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (choice, question, _), reply in zip(asked, replies):
        correct = reply is not None and score(question, reply, choice.options)
        tally[question.kind][0] += correct
        tally[question.kind][1] += 1
        rows.append({"run": choice.run, "t": choice.t, "agent": choice.agent, "kind": question.kind,
                     "question": question.text, "truth": question.truth, "reply": reply, "correct": int(correct)})
    accuracy = []
    for kind in QUESTIONS:
        if kind in tally:
            right, total = tally[kind]
            low, high = proportion_interval(right, total)
            accuracy.append({"question": kind, "group": QUESTIONS[kind][1], "correct": right, "asked": total,
                             "accuracy": right / total, "ci_low": low, "ci_high": high})
    document = {"backend": backend_spec, "run": check.run, "agents": sorted(chosen), "states": len(states),
                "questions": len(asked), "accuracy": accuracy, "batch": check.batch,
                # what was sent and what it cost (a batch's requests at half price; cache hits: nothing)
                "spent": accounted.budget.spent() if isinstance(accounted, AccountedModel) else {"calls": 0, "cost_usd": 0.0}}
    save_artifact(directory, ARTIFACT, document)
    with (Path(directory) / ANALYSIS_DIR / "comprehension_questions.csv").open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]) if rows else ["kind"])
        writer.writeheader()
        writer.writerows(rows)
    return document


async def _ask(backend: LanguageModel, asked: list[tuple[Any, Any, Any]], check: ComprehensionCheck,
               progress: Callable[[str], None] = _progress) -> list[str | None]:
    limit = asyncio.Semaphore(check.concurrency)
    sampling = Sampling(temperature=0.0, max_tokens=check.max_tokens)
    requests = [Request(messages=messages, sampling=sampling, seed=derive_seed(check.seed, index))
                for index, (_, _, messages) in enumerate(asked)]

    async def one(request: Request) -> str | None:
        async with limit:
            completion = await backend.complete(request)
            return completion.text

    try:
        if check.batch:  # every question at once, answered into the cache: then asked as usual, at half price
            # lazy: the batch APIs (aiohttp), only with --batch
            from ...batch_run import prefetch_into
            from ...llm.batches import first_requests

            await prefetch_into(backend, first_requests(requests), poll_s=check.batch_poll_s,
                                attempts=RetryPolicy().max_attempts,
                                progress=progress)
        return list(await asyncio.gather(*(one(request) for request in requests)))
    except BackendError as error:  # a failure is no answer, not a wrong one: stop
        raise BackendFailedError(f"backend '{redact(backend.name)}' failed: {redact(str(error))}; "
                                 f"check the server and ask again") from None
    finally:
        await backend.aclose()
