"""What an experiment will cost and take, before anything is spent: `python -m agentsim estimate`.

The experiment is played on the built-in stand-in with its real prompts (the same scenario,
runs, seeds, variants and `--set` values), into a scratch directory; every recorded call's
prompt is rebuilt from the store and counted with the model's own tokenizer where one is
available offline (its provider's descriptor names it, llm/providers.py: llama.cpp's
vocabulary for `local:smollm2` and `local:PATH.gguf`, transformers' for a local model
directory), else four characters a token (said so). Each call is attributed to the backend of
its agent (a population's agents take their specs in order).

Each call is priced as the run will be billed for it (llm/prices.py): at the rates of the tier
its own input tokens fall in, with its provider's prompt cache played call by call in the
run's order (llm/prompt_cache.py: Anthropic's cache behind the same breakpoints the run
places, at the model's minimum cacheable prefix; OpenAI's automatic prefix cache, 1,024 tokens
at least, in steps of 128), its cache reads and writes at their own prices.

Two figures per run and for the experiment:

- expected: what the stand-in's own run did (its calls, re-asks and stopping; its replies'
  tokens), the figure a capable model that behaves like the stand-in would give;
- to the end: a bound. A run that stops early (a consensus, a collapse) played to its last
  round at the calls and tokens per round of its last round played; every reply at
  `max_tokens`; every prompt counted so that no tokenizer counts more where the model's own is
  not here (a byte a token, and the chat format's tokens: what the budget reserves with,
  llm/accounting.py), every input token at the dearest way it can be billed (a cache write,
  no cache read), at the tier of that many tokens. Re-asks as the stand-in made them: not a
  bound on a model whose replies cannot be read (each unreadable reply is asked again up to
  the game's `max_reasks` times; the estimate says how many calls that worst case makes), nor
  on one whose longer replies make later prompts that quote them longer.

Costs use the price table the budget uses (llm/prices.py); a model without a price is shown
as unpriced. Wall time: the longest chain of one agent's calls (an agent asks one call at a
time) at the backend's latency, or the calls over the in-flight cap, `--rpm` and `--tpm`,
whichever is longer; the latency is assumed (the provider's descriptor says how long) unless
`--timed-calls N` asks for N real calls to time (they are paid for): an estimate calls no
paid API unless asked to.

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
from .llm.base import Message, Request, Sampling, estimate_tokens, prompt_tokens_at_most
from .llm.prices import Price
from .llm.providers import PromptCache, Provider
from .llm.specs import BackendOptions, backend_price, build_backend, parse_population, parse_spec
from .progress import NoView
from .runner import Experiment
from .session import run_cell
from .store import Store

# Chat formats wrap each message in a few tokens of their own (role markers, separators) and
# prime the reply with a few more: OpenAI's count for its chat models.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY = 3


@dataclass
class Figures:
    """Calls, tokens and cost, expected and played to the end (`_upper`). Of the prompt
    tokens, those read from the provider's prompt cache and written to it (expected)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    calls_upper: int = 0
    prompt_tokens_upper: int = 0
    completion_tokens_upper: int = 0
    cost_usd_upper: float = 0.0

    def add(self, other: Figures, times: int = 1) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value * times)

    def upper_only(self) -> Figures:
        """The figures to the end alone (what a round not played adds to the bound)."""
        return Figures(calls_upper=self.calls_upper, prompt_tokens_upper=self.prompt_tokens_upper,
                       completion_tokens_upper=self.completion_tokens_upper, cost_usd_upper=self.cost_usd_upper)


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
    """Tokens of a text as the model counts them (its provider's offline tokenizer), or four
    characters a token; and a bound no tokenizer exceeds, for the figures to the end."""

    def __init__(self, spec: str) -> None:
        self.exact = False
        self.name = "approximate: four characters a token (no tokenizer of this model is available offline)"
        self._count: Callable[[str], int] = estimate_tokens
        parsed = parse_spec(spec)
        try:
            found = parsed.provider_info.offline_tokenizer(parsed.target)
        except Exception as error:  # a tokenizer that fails to load: count approximately, and say why
            self.name += f" ({type(error).__name__})"
            return
        if found is not None:
            self._count, name = found
            self.name = f"exact: {name}"
            self.exact = True

    def count(self, text: str) -> int:
        return self._count(text)

    def prompt(self, messages: tuple[Message, ...]) -> int:
        return sum(self._count(message.content) + TOKENS_PER_MESSAGE for message in messages) + TOKENS_PER_REPLY

    def prompt_at_most(self, messages: tuple[Message, ...]) -> int:
        """The prompt's tokens, at most: the exact count where the tokenizer is here, else a byte a
        token and the chat format's tokens (llm/base.prompt_tokens_at_most)."""
        return self.prompt(messages) if self.exact else prompt_tokens_at_most(messages)


class Meter:
    """One backend's calls, counted and priced one by one in the run's order: its tokens, its
    prompt cache (the provider's, played as the run meets it), its price at each call's tier."""

    def __init__(self, spec: str, counter: TokenCounter, price: Price | None, options: BackendOptions) -> None:
        parsed = parse_spec(spec)
        self.provider: Provider = parsed.provider_info
        self.counter = counter
        self.price = price
        self.cache: PromptCache | None = self.provider.cache_of_prompts(parsed.target, counter.count,
                                                                        options.cache_breakpoints)

    def call(self, messages: tuple[Message, ...], reply: str, max_tokens: int | None) -> Figures:
        prompt, completion = self.counter.prompt(messages), self.counter.count(reply)
        read, written = self.cache.call(messages) if self.cache is not None else (0, 0)
        prompt_upper, completion_upper = self.counter.prompt_at_most(messages), max(completion, max_tokens or 0)
        figures = Figures(calls=1, prompt_tokens=prompt, completion_tokens=completion, cached_prompt_tokens=read,
                          cache_write_tokens=written, calls_upper=1, prompt_tokens_upper=prompt_upper,
                          completion_tokens_upper=completion_upper)
        if self.price is not None:
            figures.cost_usd = self.price.cost(prompt, completion, cached_tokens=read, cache_write_tokens=written)
            figures.cost_usd_upper = self.price.most(prompt_upper, completion_upper)
        return figures


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
                meters: dict[str, Meter]) -> tuple[list[RunEstimate], dict[str, Figures]]:
    """Each run's and each backend's calls, tokens and cost, from a stand-in run recorded in
    `directory`, call by call in order; `scenario_of(run)` is the scenario the run played (its
    cell of a grid)."""
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
            messages = tuple(store.messages(scenario, run, t, agent, attempt))
            call = meters[spec].call(messages, reply or "", getattr(scenario.params, "max_tokens", None))
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
            # Stopped early: the rounds it did not play, at its last round's figures, for the bound.
            for spec, last in by_round[run, played[-1]].items():
                estimate.figures.add(last.upper_only(), missing)
                by_backend[spec].add(last.upper_only(), missing)
            estimate.longest_chain_upper += math.ceil(estimate.longest_chain / estimate.rounds * missing)
        return sorted(runs.values(), key=lambda run: run.run), by_backend
    finally:
        store.close()


def measure_latency(spec: str, scenario: Any, options: Any, prompt: Any, calls: int) -> tuple[float, float] | None:
    """The median seconds of `calls` real calls of `prompt` to the backend, and what they cost;
    None where the backend cannot be asked (no key, nothing listening)."""
    if calls <= 0 or parse_spec(spec).provider_info.stand_in:
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


def estimate(experiment: ExperimentOptions, *, timed_calls: int = 0) -> Estimate:
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
    prices = {spec: backend_price(spec, options) for spec in specs}  # None: unpriced, or not billed
    meters = {spec: Meter(spec, counters[spec], prices[spec], options) for spec in specs}
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
                                                meters)
        first_prompt = _first_request(Path(scratch) / "standin", scenario, Request)
    document = Estimate(scenario=scenario.name, runs=run_estimates, backends={}, tokenizer="; ".join(
        f"{spec}: {counter.name}" for spec, counter in counters.items()),
        tokens_exact=all(counter.exact for counter in counters.values()))
    for spec in specs:
        figures = by_backend.get(spec, Figures())
        provider, price = meters[spec].provider, prices[spec]
        entry = BackendEstimate(spec=spec, figures=figures, price=price.as_dict() if price else None)
        if price is not None:
            entry.cost_usd, entry.cost_usd_upper = figures.cost_usd, figures.cost_usd_upper
        elif not provider.billed:
            entry.cost_usd = entry.cost_usd_upper = 0.0  # in process: no bill
        if figures.cached_prompt_tokens or figures.cache_write_tokens:
            document.notes.append(f"{spec}: of {figures.prompt_tokens} prompt tokens, {figures.cached_prompt_tokens} "
                                  f"expected read from the provider's prompt cache and {figures.cache_write_tokens} "
                                  f"written to it, priced as billed (the cache kept warm between uses)")
        measured = measure_latency(spec, scenario, options, first_prompt, timed_calls) if first_prompt else None
        if measured is not None:
            entry.latency_s, entry.timed_calls_cost_usd = measured
            entry.latency_measured = True
        else:
            entry.latency_s = provider.latency_s  # what its descriptor assumes a call takes
            if not provider.stand_in:
                asked = "no timed call answered" if timed_calls else "--timed-calls N times N real calls, paid for"
                document.notes.append(f"{spec}: latency assumed {entry.latency_s:g} s a call ({asked})")
        document.backends[spec] = entry
    reasks = max((getattr(run_scenario.params, "max_reasks", 0) for run_scenario in scenarios_played), default=0)
    if reasks:
        first = sum(run.figures.calls_upper for run in run_estimates)
        document.notes.append(f"a reply that cannot be read is asked again up to max_reasks={reasks} times: if no reply "
                              f"could be read, the calls would be up to {first * (1 + reasks)} (the figure to the end "
                              f"times {1 + reasks})")
    if not document.tokens_exact:
        document.notes.append("tokens counted approximately (four characters a token) where no tokenizer is available "
                              "offline; the figures to the end count a byte a token there (no tokenizer counts more)")
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
