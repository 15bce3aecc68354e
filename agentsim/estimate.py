"""What an experiment will cost and take, before anything is spent: `python -m agentsim estimate`.

The experiment is played on the built-in stand-in with its real prompts (the same scenario,
runs, seeds, variants and `--set` values), into a scratch directory; every recorded call's
prompt is rebuilt from the store and counted with the model's own tokenizer where one is
available offline (llama.cpp's vocabulary for `local:smollm2` and `local:PATH.gguf`,
transformers' for a local model directory), else four characters a token (said so). Each call
is attributed to the backend of its agent (a population's agents take their specs in order).

Two figures per run and for the experiment:

- expected: what the stand-in's own run did (its calls, re-asks and stopping; its replies'
  tokens), the figure a capable model that behaves like the stand-in would give;
- to the end: a run that stops early (a consensus, a collapse) played to its last round at
  the calls and tokens per round of its last round played, and every reply at `max_tokens`;
  re-asks as the stand-in made them. Not a bound on a model whose replies cannot be read: each
  unreadable reply is asked again up to the game's `max_reasks` times, and the estimate says
  how many calls that worst case would make.

Costs use the price table the budget uses (llm/prices.py); a model without a price is shown
as unpriced. Wall time: the longest chain of one agent's calls (an agent asks one call at a
time) at the backend's latency, or the calls over the in-flight cap, `--rpm` and `--tpm`,
whichever is longer; the latency is measured by a few timed calls where the backend answers
(`--timed-calls`, 3 by default, their cost counted) and assumed otherwise (said so).

`estimate.json` (`--out DIR`) is read back by a run recorded into the same directory: its
`summary.json`, its live view and its report show the estimate beside what was spent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import event_loop
from .blocking import run_blocking
from .configure import ExperimentOptions, configure
from .errors import UserError
from .estimate_file import ESTIMATE_FILE
from .llm.accounting import Budget
from .llm.base import Request, Sampling, estimate_tokens
from .llm.prices import price_for
from .llm.specs import build_backend, parse_population, parse_spec
from .llm.stack import REMOTE
from .progress import NoView
from .runner import Experiment
from .session import run_cell
from .store import Store

# Chat formats wrap each message in a few tokens of their own (role markers, separators).
TOKENS_PER_MESSAGE = 4
# What a call is assumed to take where no timed call could be made (a hosted model, no key).
ASSUMED_LATENCY_S = {"openai": 1.0, "anthropic": 1.5, "tgi": 0.5, "local": 2.0, "stand-in": 0.0001}


@dataclass
class Figures:
    """Calls and tokens, expected and played to the end (`_upper`)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls_upper: int = 0
    prompt_tokens_upper: int = 0
    completion_tokens_upper: int = 0

    def add(self, other: Figures) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class BackendEstimate:
    spec: str
    figures: Figures = field(default_factory=Figures)
    price: dict[str, Any] | None = None  # the price used, with its source; None: unpriced
    cost_usd: float | None = None
    cost_usd_upper: float | None = None
    latency_s: float = 0.0
    latency_measured: bool = False
    timed_calls_cost_usd: float = 0.0


@dataclass
class RunEstimate:
    run: int
    seed: int
    rounds: int
    max_rounds: int
    figures: Figures = field(default_factory=Figures)
    longest_chain: int = 0  # the most calls one agent asks in the run (they come one after another)
    longest_chain_upper: int = 0  # the same, the run played to its last round


@dataclass
class Estimate:
    scenario: str
    runs: list[RunEstimate]
    backends: dict[str, BackendEstimate]
    tokenizer: str
    tokens_exact: bool
    wall_s: float = 0.0
    wall_s_upper: float = 0.0
    notes: list[str] = field(default_factory=list)

    def totals(self) -> Figures:
        total = Figures()
        for run in self.runs:
            total.add(run.figures)
        return total

    def cost(self, upper: bool = False) -> float | None:
        costs = [backend.cost_usd_upper if upper else backend.cost_usd for backend in self.backends.values()]
        return None if any(cost is None for cost in costs) else float(sum(cost for cost in costs if cost is not None))

    def as_dict(self) -> dict[str, Any]:
        document = asdict(self)
        document["totals"] = asdict(self.totals())
        document["cost_usd"], document["cost_usd_upper"] = self.cost(), self.cost(upper=True)
        return document


class TokenCounter:
    """Tokens of a text as the model counts them, or four characters a token."""

    def __init__(self, spec: str) -> None:
        self.exact = False
        self.name = "approximate: four characters a token (no tokenizer of this model is available offline)"
        self._count: Callable[[str], int] = estimate_tokens
        parsed = parse_spec(spec)
        if parsed.provider != "local":
            return
        try:
            if parsed.target.lower() == "smollm2" or parsed.target.lower().endswith(".gguf"):
                from llama_cpp import Llama

                from .llm.llamacpp import SMOLLM2, smollm2_path  # (the local extra: only for a local model)

                path = smollm2_path() if parsed.target.lower() == SMOLLM2 else Path(parsed.target)
                vocabulary = Llama(model_path=str(path), vocab_only=True, verbose=False)
                self._count = lambda text: len(vocabulary.tokenize(text.encode(), add_bos=False, special=False))
                self.name = f"exact: llama.cpp's vocabulary of {path.name}"
            else:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(parsed.target, local_files_only=True)
                self._count = lambda text: len(tokenizer.encode(text, add_special_tokens=False))
                self.name = f"exact: the tokenizer of {parsed.target}"
            self.exact = True
        except Exception as error:  # no local extra, a model not here: count approximately, and say why
            self.name += f" ({type(error).__name__})"

    def count(self, text: str) -> int:
        return self._count(text)


def agent_specs(backend: str, population: str) -> Callable[[int], str]:
    """Which spec an agent index asks: a population's agents take their specs in order."""
    if not population:
        return lambda agent: backend
    shares = parse_population(population)
    bounds: list[tuple[int, str]] = []
    total = 0
    for spec, count in shares:
        total += count
        bounds.append((total, spec))
    return lambda agent: next((spec for bound, spec in bounds if agent < bound), bounds[-1][1])


def count_calls(directory: Path, scenario_of: Callable[[int], Any], specs: Callable[[int], str],
                counters: dict[str, TokenCounter]) -> tuple[list[RunEstimate], dict[str, Figures]]:
    """Each run's and each backend's calls and tokens, from a stand-in run recorded in
    `directory`; `scenario_of(run)` is the scenario the run played (its cell of a grid)."""
    store = Store(directory)
    try:
        runs = {row["run"]: RunEstimate(run=row["run"], seed=int((row["summary"] or {}).get("seed", 0)), rounds=0,
                                        max_rounds=scenario_of(row["run"]).max_rounds()) for row in store.runs()}
        by_backend: dict[str, Figures] = {}
        by_round: dict[tuple[int, int], dict[str, Figures]] = {}  # (run, round) -> spec -> figures
        chains: dict[tuple[int, int], int] = {}
        rows = list(store.rows("SELECT c.run, c.t, c.agent, c.attempt, c.reply, e.round FROM calls c LEFT JOIN "
                               "encounters e ON e.run = c.run AND e.t = c.t ORDER BY c.run, c.t, c.agent, c.attempt"))
        for run, t, agent, attempt, reply, round_ in rows:
            spec, scenario = specs(agent), scenario_of(run)
            counter, max_tokens = counters[spec], getattr(scenario.params, "max_tokens", None)
            prompt = sum(counter.count(message.content) + TOKENS_PER_MESSAGE
                         for message in store.messages(scenario, run, t, agent, attempt))
            completion = counter.count(reply or "")
            call = Figures(calls=1, prompt_tokens=prompt, completion_tokens=completion, calls_upper=1,
                           prompt_tokens_upper=prompt, completion_tokens_upper=max(completion, max_tokens or 0))
            runs[run].figures.add(call)
            by_backend.setdefault(spec, Figures()).add(call)
            by_round.setdefault((run, round_ or 0), {}).setdefault(spec, Figures()).add(call)
            chains[run, agent] = chains.get((run, agent), 0) + 1
        for run, estimate in runs.items():
            played = sorted(round_ for key_run, round_ in by_round if key_run == run)
            estimate.rounds = len(played)
            estimate.longest_chain = max((count for (key_run, _), count in chains.items() if key_run == run), default=0)
            estimate.longest_chain_upper = estimate.longest_chain
            missing = max(0, estimate.max_rounds - estimate.rounds) if played else 0
            if not missing:
                continue
            # Stopped early: the rounds it did not play, at its last round's figures, for the upper bound.
            for spec, last in by_round[run, played[-1]].items():
                extra = Figures(calls_upper=last.calls_upper * missing, prompt_tokens_upper=last.prompt_tokens_upper * missing,
                                completion_tokens_upper=last.completion_tokens_upper * missing)
                estimate.figures.add(extra)
                by_backend[spec].add(extra)
            estimate.longest_chain_upper += math.ceil(estimate.longest_chain / estimate.rounds * missing)
        return sorted(runs.values(), key=lambda run: run.run), by_backend
    finally:
        store.close()


def measure_latency(spec: str, scenario: Any, options: Any, prompt: Any, calls: int) -> tuple[float, float] | None:
    """The median seconds of `calls` real calls of `prompt` to the backend, and what they cost;
    None where the backend cannot be asked (no key, nothing listening)."""
    if calls <= 0 or parse_spec(spec).provider == "stand-in":
        return None
    try:
        # No response cache: a repeated timed request would be answered from it in microseconds.
        asked = dataclasses.replace(options, cache=False, replay=False, sample_locally=False)
        backend = build_backend(spec, asked, Budget(), lambda message: None, rules=scenario.standin_part().rules)
    except UserError:
        return None

    async def timed() -> tuple[float, float]:
        seconds, cost = [], 0.0
        try:
            for _ in range(calls):
                started = time.perf_counter()
                completion = await backend.complete(prompt)
                seconds.append(time.perf_counter() - started)
                cost += completion.cost_usd
        finally:
            await backend.aclose()
        return sorted(seconds)[len(seconds) // 2], cost

    try:
        return event_loop.run(asyncio.wait_for(timed(), timeout=60))
    except Exception:  # no answer within the minute: the latency is assumed, and the estimate says so
        return None


def estimate(experiment: ExperimentOptions, *, timed_calls: int = 3) -> Estimate:
    """Play the experiment the options describe (built as every front door builds it:
    agentsim/configure.py) on the stand-in and count what it would ask of its backend (or its
    population's backends): see the module's docstring."""
    if experiment.resume:
        raise UserError("estimate plays the whole experiment afresh on the stand-in, not what a resume adds; drop "
                        "--resume (and --add-runs)")
    config = configure(experiment)
    backend, population, options = config.backend, config.population, config.llm
    specs = [spec for spec, _ in parse_population(population)] if population else [backend]
    counters = {spec: TokenCounter(spec) for spec in specs}
    with tempfile.TemporaryDirectory(prefix="agentsim-estimate-") as scratch:
        played = Experiment(config.on_the_stand_in(Path(scratch) / "standin"), NoView())
        played.open()
        run_blocking(played.run())
        session = played.session
        scenario = session.scenario

        recorded = Store(Path(scratch) / "standin")
        try:
            replicates = {row["run"]: (row["summary"] or {}).get("replicate", row["run"] - 1) for row in recorded.runs()}
        finally:
            recorded.close()

        def scenario_of(run: int) -> Any:
            replicate = replicates.get(run, run - 1)
            return run_cell(session.scenario, session.variant_scenarios, session.config.seed, replicate)[0]

        scenarios_played = [session.scenario, *session.variant_scenarios]
        run_estimates, by_backend = count_calls(Path(scratch) / "standin", scenario_of, agent_specs(backend, population),
                                                counters)
        first_prompt = _first_request(Path(scratch) / "standin", scenario, Request)
    document = Estimate(scenario=scenario.name, runs=run_estimates, backends={}, tokenizer="; ".join(
        f"{spec}: {counter.name}" for spec, counter in counters.items()),
        tokens_exact=all(counter.exact for counter in counters.values()))
    for spec in specs:
        figures = by_backend.get(spec, Figures())
        parsed = parse_spec(spec)
        remote = parsed.provider in REMOTE  # billed over the network; in process nothing is
        price = price_for(parsed.target) if remote else None
        entry = BackendEstimate(spec=spec, figures=figures, price=price.as_dict() if price else None)
        if price is not None:
            entry.cost_usd = price.cost(figures.prompt_tokens, figures.completion_tokens)
            entry.cost_usd_upper = price.cost(figures.prompt_tokens_upper, figures.completion_tokens_upper)
        elif not remote:
            entry.cost_usd = entry.cost_usd_upper = 0.0  # in process: no bill
        measured = measure_latency(spec, scenario, options, first_prompt, timed_calls) if first_prompt else None
        if measured is not None:
            entry.latency_s, entry.timed_calls_cost_usd = measured
            entry.latency_measured = True
        else:
            entry.latency_s = ASSUMED_LATENCY_S.get(parsed.provider, 1.0)
            if parsed.provider != "stand-in":
                document.notes.append(f"{spec}: latency assumed {entry.latency_s:g} s a call (no timed call answered)")
        document.backends[spec] = entry
    reasks = max((getattr(run_scenario.params, "max_reasks", 0) for run_scenario in scenarios_played), default=0)
    if reasks:
        first = sum(run.figures.calls_upper for run in run_estimates)
        document.notes.append(f"a reply that cannot be read is asked again up to max_reasks={reasks} times: if no reply "
                              f"could be read, the calls would be up to {first * (1 + reasks)} (the figure to the end "
                              f"times {1 + reasks})")
    if not document.tokens_exact:
        document.notes.append("tokens counted approximately (four characters a token) where no tokenizer is available "
                              "offline")
    for spec, entry in document.backends.items():
        if entry.cost_usd is None:
            document.notes.append(f"{spec}: no price (give one with AGENTSIM_PRICES); its cost is not estimated")
    document.wall_s, document.wall_s_upper = _wall_time(document, options)
    return document


def _first_request(directory: Path, scenario: Any, request_type: Any) -> Any:
    store = Store(directory)
    try:
        row = next(iter(store.rows("SELECT run, t, agent, attempt FROM calls ORDER BY run, t LIMIT 1")), None)
        if row is None:
            return None
        messages = store.messages(scenario, *row)
    finally:
        store.close()
    sampling = scenario.params.sampling() if hasattr(scenario.params, "sampling") else None
    if sampling is None:
        sampling = Sampling()
    return request_type(messages=messages, sampling=sampling)


def _wall_time(document: Estimate, options: Any) -> tuple[float, float]:
    """The longer of an agent's chain of calls at the latency, and the experiment's calls
    through the in-flight cap and the rate limits."""
    limits = options.limits
    latency = max((entry.latency_s for entry in document.backends.values()), default=0.0)
    totals = document.totals()
    figures = []
    for calls, tokens, chain in ((totals.calls, totals.prompt_tokens + totals.completion_tokens,
                                  max((run.longest_chain for run in document.runs), default=0)),
                                 (totals.calls_upper, totals.prompt_tokens_upper + totals.completion_tokens_upper,
                                  max((run.longest_chain_upper for run in document.runs), default=0))):
        bounds = [chain * latency, calls * latency / max(1, limits.max_in_flight)]
        if limits.rpm:
            bounds.append(calls / limits.rpm * 60)
        if limits.tpm:
            bounds.append(tokens / limits.tpm * 60)
        figures.append(max(bounds))
    return figures[0], figures[1]


def write(estimate_: Estimate, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ESTIMATE_FILE
    path.write_text(json.dumps(estimate_.as_dict(), indent=2), encoding="utf-8")
    return path
