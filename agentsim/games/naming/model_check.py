"""`python -m agentsim check-model --backend SPEC`: is a model fit for the naming-game
experiments? Four measurements on the model itself, through the backend a run would use, with
the game's own prompts, sampling and grammar (games/naming/fitness.py):

- readable replies: the share of first replies the game can read, without the answer grammar
  and with it (a run without a grammar on a model that needs one is refused at start-up,
  agentsim/model_fitness.py);
- position and letter preference: from an empty memory, with each option order equally often,
  the share of choices that take the first-listed name, and that take the pool's first name. A
  model that reasons about the game has neither; a small model often has both, and then its
  "bias" and "conventions" are the prompt's order and the letters' shapes;
- calibration: at several memory states, the stored option distribution (exact scoring,
  llm/scoring.py) against the options answered over many seeds, by an exact binomial test at
  each state; the check fails when any state's p-value is below `alpha / states` (Bonferroni),
  so a calibrated backend fails it with probability at most `alpha` (1%). A backend that
  cannot score has no stored distribution: `--sample-locally` and exact strategy tables refuse
  on it, and this says so;
- comprehension: the paper's meta-prompting questions (Table S7) at several states, scored
  against the true game state (games/naming/comprehension.py).

The verdict is plain: fit, or not, with the reasons. The thresholds are stated in `ModelCheck`.

With `batch` (`--batch`, openai: and anthropic:), every request is found first by a rehearsal on
the stand-in and asked through the provider's batch API at half price (agentsim/batch_run.py);
the check then plays as usual, served from the response cache. The preference questions go in
both modes, since the mode is chosen from the readable replies that come back with the batch.
"""

from __future__ import annotations

import asyncio
import math
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from scipy import stats

from ... import event_loop
from ...analysis.stats import proportion_interval
from ...errors import BackendError, UserError
from ...llm.accounting import AccountedModel
from ...llm.base import Completion, LanguageModel, Request, Sampling
from ...llm.health import HealthPolicy
from ...llm.retries import RetryPolicy
from ...llm.specs import BackendOptions, build_backend, parse_spec
from ...llm.stack import layer
from ...llm.standin import StandInModel
from ...seeding import derive_seed
from . import QUESTIONS, NamingGame, NamingSituation, question_messages, questions_for, score
from .fitness import naming_request, probe_requests, probe_situations


@dataclass(frozen=True, kw_only=True)
class ModelCheck:
    backend: str
    names: tuple[str, ...] = ("Q", "M")
    readable_prompts: int = 24  # per mode, over 4 situations
    preference_seeds: int = 24  # per option order, from an empty memory
    calibration_states: int = 3
    calibration_seeds: int = 60
    comprehension_states: int = 4
    alpha: float = 0.01  # the calibration test's family-wise false-alarm rate
    seed: int = 0
    concurrency: int = 8
    timeout_s: float = 60.0  # per attempt, and the start-up probe's deadline at least (--timeout)
    cache: bool = True  # the shared response cache: False measures the model afresh (--no-cache)
    # the verdict's thresholds
    readable_share: float = 0.9  # of first replies readable, in the mode a run would use
    comprehension_share: float = 0.7  # of Table S7's questions answered right (the paper's models: most)
    preference_margin: float = 0.1  # a first-listed share this far from 1/2, its 95% interval excluding 1/2
    # every request through the provider's batch API first, at half price (--batch, --batch-poll)
    batch: bool = False
    batch_poll_s: float = 30.0


def _progress(line: str) -> None:
    print(f"check-model: {line}", file=sys.stderr, flush=True)


@dataclass
class CheckReport:
    backend: str
    names: tuple[str, ...]
    readable: dict[str, tuple[int, int]] = field(default_factory=dict)  # mode -> (readable, asked)
    position: tuple[int, int] = (0, 0)  # (first-listed chosen, readable choices)
    letter: tuple[int, int] = (0, 0)  # (the pool's first name chosen, readable choices)
    # the same from the stored distributions, averaged over the orders (None: none stored)
    position_exact: float | None = None
    letter_exact: float | None = None
    preference_mode: str = ""
    calibration: list[dict[str, Any]] | None = None  # None: the backend reports no distribution
    comprehension: dict[str, tuple[int, int]] = field(default_factory=dict)  # group -> (right, asked)
    fit: bool = False
    reasons: list[str] = field(default_factory=list)
    spent: dict[str, float] = field(default_factory=dict)  # requests sent and their cost (the budget's)

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "names": list(self.names), "readable": self.readable,
                "position": self.position, "letter": self.letter, "position_exact": self.position_exact,
                "letter_exact": self.letter_exact, "preference_mode": self.preference_mode,
                "calibration": self.calibration, "comprehension": self.comprehension, "fit": self.fit,
                "reasons": self.reasons, "spent": self.spent}


async def run_check(check: ModelCheck, backend: LanguageModel | None = None,
                    progress: Callable[[str], None] = _progress) -> CheckReport:
    """Measure the model and give the verdict (`backend`: one already built, else `check.backend`;
    `progress`: where a batch's progress goes while it is waited for)."""
    plain = NamingGame(names=check.names).for_experiment(check.seed)
    constrained = plain.with_params(constrained_decoding=True)
    model = backend or build_backend(check.backend, backend_options(check), rules=plain.standin_part().rules)
    limit = asyncio.Semaphore(check.concurrency)
    try:
        if check.batch:
            await _prefetch(model, check, progress)
        report = CheckReport(check.backend, check.names)
        for mode, game in (("without the grammar", plain), ("with the grammar", constrained)):
            probes = probe_requests(game, check.readable_prompts, check.seed, situations=4)
            replies = await _ask(model, [request for request, _ in probes], limit)
            report.readable[mode] = (sum(reply is not None and game.codec.parse(reply.text, situation).problem is None
                                         for reply, (_, situation) in zip(replies, probes)), len(probes))
        mode = max(report.readable, key=lambda key: (report.readable[key][0], key == "with the grammar"))
        game = constrained if mode == "with the grammar" else plain
        report.preference_mode = mode
        report.position, report.letter, exact = await _preference(model, game, check, limit)
        if exact is not None:
            report.position_exact, report.letter_exact = exact
        report.calibration = await calibrate(model, constrained, check, limit)
        report.comprehension = await _comprehension(model, plain, check, limit)
        accounted = layer(model, AccountedModel)
        report.spent = accounted.budget.spent() if isinstance(accounted, AccountedModel) else {}
    finally:
        if backend is None:
            await model.aclose()
    report.fit, report.reasons = verdict(report, check)
    return report


def backend_options(check: ModelCheck) -> BackendOptions:
    """How the check reaches the model: as a run would, with its --timeout (the start-up probe
    waits at least as long, since a loaded host answers its first request slowly) and without
    the response cache where --no-cache asks to measure afresh."""
    return BackendOptions(model_check=False, timeout_s=check.timeout_s, cache=check.cache, batch=check.batch,
                          batch_poll_s=check.batch_poll_s, retry=RetryPolicy(deadline_s=max(RetryPolicy.deadline_s, 4 * check.timeout_s)),
                          health=HealthPolicy(probe_deadline_s=max(HealthPolicy.probe_deadline_s, check.timeout_s)))


async def _ask(model: LanguageModel, requests: list[Request], limit: asyncio.Semaphore) -> list[Completion | None]:
    async def one(request: Request) -> Completion | None:
        async with limit:
            try:
                return await model.complete(request)
            except BackendError:
                return None  # no reply: not a readable one

    return list(await asyncio.gather(*(one(request) for request in requests)))


async def _preference(model: LanguageModel, game: NamingGame, check: ModelCheck, limit: asyncio.Semaphore
                      ) -> tuple[tuple[int, int], tuple[int, int], tuple[float, float] | None]:
    """From an empty memory, each order of the names in turn: the choices of the first-listed
    name, and of the pool's first name, among the readable replies; and the same chances from
    the stored distributions, averaged over the orders, where the backend scores them."""
    names = game.names
    orders = [names[shift:] + names[:shift] for shift in range(len(names))]
    asked = [(NamingSituation(order, ()), derive_seed(check.seed, 1, index, seed))
             for index, order in enumerate(orders) for seed in range(check.preference_seeds)]
    replies = await _ask(model, [naming_request(game, situation, seed) for situation, seed in asked], limit)
    chosen = [(situation, game.codec.parse(reply.text, situation).action) for reply, (situation, _) in zip(replies, asked)
              if reply is not None]
    readable = [(situation, action) for situation, action in chosen if action is not None]
    scored = {situation.options: reply.option_probabilities for reply, (situation, _) in zip(replies, asked)
              if reply is not None and reply.option_probabilities is not None}
    exact = None
    if len(scored) == len(orders):
        exact = (sum(scored[order][order[0]] for order in orders) / len(orders),
                 sum(scored[order][names[0]] for order in orders) / len(orders))
    return ((sum(action == situation.options[0] for situation, action in readable), len(readable)),
            (sum(action == names[0] for _, action in readable), len(readable)), exact)


async def calibrate(model: LanguageModel, game: NamingGame, check: ModelCheck,
                    limit: asyncio.Semaphore | None = None) -> list[dict[str, Any]] | None:
    """At each of `check.calibration_states` states, the stored distribution against what was
    answered over `check.calibration_seeds` seeds; None when the backend stores none."""
    limit = limit or asyncio.Semaphore(check.concurrency)
    results: list[dict[str, Any]] = []
    focus = game.names[0]
    for situation in probe_situations(game, check.calibration_states, derive_seed(check.seed, 2)):
        requests = [naming_request(game, situation, derive_seed(check.seed, 2, len(results), seed))
                    for seed in range(check.calibration_seeds)]
        replies = [reply for reply in await _ask(model, requests, limit) if reply is not None]
        if not replies or any(reply.option_probabilities is None for reply in replies):
            return None
        stored = float(replies[0].option_probabilities[focus])  # type: ignore[index]
        answered = sum(game.codec.parse(reply.text, situation).action == focus for reply in replies)
        test = stats.binomtest(answered, len(replies), min(max(stored, 0.0), 1.0))
        results.append({"memory": ";".join(f"{own},{partner}" for own, partner, _ in situation.memory) or "(empty)",
                        "options": list(situation.options), "name": focus, "stored": stored,
                        "unscored": replies[0].unscored, "answered": answered, "asked": len(replies),
                        "p_value": float(test.pvalue),
                        "within": bool(test.pvalue >= check.alpha / check.calibration_states)})
    return results


async def _comprehension(model: LanguageModel, game: NamingGame, check: ModelCheck,
                         limit: asyncio.Semaphore) -> dict[str, tuple[int, int]]:
    """Table S7's questions at a few states, answered greedily (as `agentsim comprehension`)."""
    rng = random.Random(derive_seed(check.seed, 3))
    params = game.params
    asked = []
    for situation in probe_situations(game, check.comprehension_states, derive_seed(check.seed, 3)):
        for question in questions_for(situation.options, situation.memory, success_payoff=params.success_payoff,
                                      failure_payoff=params.failure_payoff, payoff=game.payoff, rng=rng):
            asked.append((situation, question))
    sampling = Sampling(temperature=0.0, max_tokens=24)
    requests = [Request(messages=question_messages(game.codec.messages(situation), question), sampling=sampling,
                        seed=derive_seed(check.seed, 3, index)) for index, (situation, question) in enumerate(asked)]
    replies = await _ask(model, requests, limit)
    tally: dict[str, tuple[int, int]] = {}
    for (situation, question), reply in zip(asked, replies):
        group = QUESTIONS[question.kind][1]
        right, total = tally.get(group, (0, 0))
        tally[group] = (right + (reply is not None and score(question, reply.text, situation.options)), total + 1)
    return tally


def verdict(report: CheckReport, check: ModelCheck) -> tuple[bool, list[str]]:
    """Fit for the experiments, or not, and why."""
    reasons = []
    plain, constrained = report.readable["without the grammar"], report.readable["with the grammar"]
    if _share(plain) < check.readable_share and _share(constrained) < check.readable_share:
        reasons.append(f"its replies cannot be read: {_share(plain):.0%} without the grammar, {_share(constrained):.0%} "
                       f"with it")
    elif _share(plain) < check.readable_share:
        reasons.append(f"it needs the answer grammar (--set constrained_decoding=true): only {_share(plain):.0%} of its "
                       f"replies are readable without it")
    chosen, total = report.position
    no_preference = 1 / len(report.names)
    if report.position_exact is not None:
        if abs(report.position_exact - no_preference) >= check.preference_margin:
            reasons.append(f"it chooses by position: the first-listed name with probability {report.position_exact:.0%} "
                           f"from an empty memory, so its biases and conventions follow the prompt's order")
    elif total:  # sampled figures only (a server reports no distributions): judged with their interval
        low, high = proportion_interval(chosen, total)
        share, margin = chosen / total, check.preference_margin
        if abs(share - no_preference) >= margin and not low <= no_preference <= high:
            reasons.append(f"it chooses by position: the first-listed name {share:.0%} of the time "
                           f"(95% interval {low:.0%}-{high:.0%}), so its biases and conventions follow the prompt's order")
        elif not (no_preference - margin < low and high < no_preference + margin):
            needed = samples_to_settle(share, no_preference, margin)
            per_order = math.ceil(needed / len(report.names))
            reasons.append(f"{UNSETTLED}: the first-listed name {share:.0%} of {total} "
                           f"sampled choices (95% interval {low:.0%}-{high:.0%}) neither excludes "
                           f"{no_preference:.0%} (no preference) nor lies within {no_preference - margin:.0%}-"
                           f"{no_preference + margin:.0%}; about {needed} readable choices would settle it "
                           f"(check-model --preference-seeds {per_order})")
    if report.calibration is not None and not all(entry["within"] for entry in report.calibration):
        reasons.append("its stored option distributions do not match its answers (please report this: "
                       "--sample-locally and exact tables would be wrong on it)")
    right = sum(value[0] for value in report.comprehension.values())
    asked = sum(value[1] for value in report.comprehension.values())
    if asked and right / asked < check.comprehension_share:
        reasons.append(f"it answers {right / asked:.0%} of the paper's comprehension questions right (Table S7; "
                       f"fit: {check.comprehension_share:.0%}), so its choices do not follow from the game's rules")
    needs_grammar_only = len(reasons) == 1 and reasons[0].startswith("it needs the answer grammar")
    # (an unsettled preference is no finding against the model, and no clearance either: not fit until settled)
    return (not reasons or needs_grammar_only), reasons


def samples_to_settle(share: float, no_preference: float, margin: float) -> int:
    """Readable choices whose 95% interval around `share` would settle the question: exclude
    `no_preference` where the share is at least `margin` from it, else lie within `margin` of
    it (the normal approximation; a share near the margin's edge needs many)."""
    distance = abs(share - no_preference)
    room = distance if distance >= margin else margin - distance
    spread = max(share * (1 - share), 0.01)
    return max(1, min(MAX_SAMPLES, math.ceil(1.96**2 * spread / max(room, 1e-6) ** 2)))


MAX_SAMPLES = 100_000
UNSETTLED = "its position preference is not settled"


def _share(counts: tuple[int, int]) -> float:
    return counts[0] / counts[1] if counts[1] else 0.0


def report_lines(report: CheckReport, check: ModelCheck) -> list[str]:
    """What the command prints."""
    lines = [f"check-model {report.backend} (naming game, names {' '.join(report.names)})"]
    lines.append("readable replies: " + ", ".join(f"{right} of {total} {mode} ({right / total:.0%})"
                                                  for mode, (right, total) in report.readable.items()))
    for label, (chosen, total), exact in (("first-listed name", report.position, report.position_exact),
                                          (f"{report.names[0]}", report.letter, report.letter_exact)):
        if total:
            low, high = proportion_interval(chosen, total)
            lines.append(f"preference: {label} chosen {chosen / total:.0%} [{low:.0%}, {high:.0%}] of {total} readable "
                         f"first choices ({report.preference_mode})"
                         + ("" if exact is None else f", exact probability {exact:.0%}")
                         + f"; no preference: {1 / len(report.names):.0%}"
                         + ("" if exact is None else _sampled_beside_exact(chosen, total, exact, low, high)))
    if report.calibration is None:
        lines.append("calibration: not available: this backend reports no exact option distributions "
                     "(--sample-locally and exact strategy tables refuse on it; docs/backends.md)")
    else:
        states = "; ".join(f"{entry['memory']} stored P({entry['name']})={entry['stored']:.3f}, answered "
                           f"{entry['answered']}/{entry['asked']} (p={entry['p_value']:.2g})"
                           for entry in report.calibration)
        within = all(entry["within"] for entry in report.calibration)
        lines.append(f"calibration: {'within' if within else 'OUTSIDE'} the binomial tolerance (false-alarm rate "
                     f"{check.alpha:.0%}): {states}")
    if report.comprehension:
        right = sum(value[0] for value in report.comprehension.values())
        asked = sum(value[1] for value in report.comprehension.values())
        groups = ", ".join(f"{group} {value[0]}/{value[1]}" for group, value in report.comprehension.items())
        lines.append(f"comprehension (Table S7): {right} of {asked} right ({right / asked:.0%}; {groups})")
    if report.fit:
        lines.append("verdict: FIT for the naming-game experiments" + (f", {report.reasons[0][3:]}" if report.reasons else ""))
    elif all(reason.startswith(UNSETTLED) for reason in report.reasons):
        lines.append("verdict: NOT SETTLED for the naming-game experiments: " + "; ".join(report.reasons)
                     + ". Nothing else speaks against it.")
    else:
        lines.append("verdict: NOT FIT for the naming-game experiments: " + "; ".join(report.reasons)
                     + ". Runs on it test the pipeline, not the paper's hypotheses.")
    return lines


def _sampled_beside_exact(chosen: int, total: int, exact: float, low: float, high: float) -> str:
    """Why a sampled share may lie off the exact figure printed beside it: said, not left to puzzle."""
    if low <= exact <= high:
        return ""
    p_value = float(stats.binomtest(chosen, total, min(max(exact, 0.0), 1.0)).pvalue)
    return (f" (the sampled interval misses the exact {exact:.0%}: a sample this far off comes with p={p_value:.2g}, and "
            f"a 95% interval misses the true value one time in twenty; the verdict uses the exact figure, and the "
            f"calibration line tests the stored distributions against the answers)")


def check_model(check: ModelCheck) -> CheckReport:
    if parse_spec(check.backend).provider_info.stand_in:
        raise UserError("check-model checks a language model, and the stand-in is a rule (its answers are what its "
                        "settings say): give a model with --backend, e.g. --backend local:smollm2")
    if check.batch:
        from ...batch_run import require_batch_backend  # lazy: the batch APIs (aiohttp), only with --batch

        require_batch_backend([check.backend])
    return event_loop.run(run_check(check))


async def _prefetch(model: LanguageModel, check: ModelCheck, progress: Callable[[str], None]) -> None:
    """Every request the check asks, found by a rehearsal on the stand-in (the preference in
    both modes), answered through the provider's batch API into `model`'s response cache."""
    # lazy: the batch APIs (aiohttp), only with --batch
    from ...batch_run import Recorder, prefetch_into
    from ...llm.batches import first_requests

    plain = NamingGame(names=check.names).for_experiment(check.seed)
    rehearsal = Recorder(StandInModel(plain.standin_part().rules))
    rehearsed = replace(check, batch=False)
    await run_check(rehearsed, rehearsal)
    limit = asyncio.Semaphore(check.concurrency)
    for game in (plain, plain.with_params(constrained_decoding=True)):
        await _preference(rehearsal, game, rehearsed, limit)
    requests = first_requests(rehearsal.requests)
    progress(f"--batch: {len(requests)} requests found by a rehearsal on the stand-in")
    await prefetch_into(model, requests, poll_s=check.batch_poll_s, attempts=BackendOptions().retry.max_attempts,
                        progress=progress)
