"""`--batch`: an experiment whose calls are independent, asked through a batch API before it
plays (llm/batches.py says how). Here: which experiments may, and the stand-in's play that finds
the requests it will make."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import BackendError, BackendFailedError, BackendSpecError
from .llm.accounting import answer_cost, reservation
from .llm.base import Completion, LanguageModel, Request
from .llm.prices import FREE, price_for
from .llm.providers import batch_providers
from .llm.specs import parse_spec
from .secrets import redact

if TYPE_CHECKING:
    from .session import Session


def refuse_unbatchable(session: Session) -> None:
    """--batch only where every call can wait for none: one hosted backend, independent calls."""
    scenarios = [session.scenario, *session.variant_scenarios]
    dependent = sorted({type(scenario).__name__ for scenario in scenarios if not scenario.independent_calls})
    if dependent:
        raise BackendSpecError(f"--batch asks every call at once, and {', '.join(dependent)}'s calls depend on earlier "
                               f"answers (its agents remember); drop --batch (it is for the bias and strategy probes, and "
                               f"scenarios that set independent_calls = True)")
    require_batch_backend([spec for spec, _ in session.shares])


def require_batch_backend(specs: Sequence[str]) -> None:
    """--batch (of a run, `comprehension` or `check-model`) needs one backend whose provider has a
    batch API (its descriptor says so: llm/providers.py)."""
    if len(specs) != 1 or parse_spec(specs[0]).provider_info.batch is None:
        batched = " or ".join(batch_providers())
        raise BackendSpecError(f"--batch needs one {batched} backend (got {', '.join(specs)}); drop --batch "
                               f"or choose --backend openai:MODEL / anthropic:MODEL")


class Recorder:
    """The stand-in, keeping every request it is asked (the rehearsal that finds a command's
    requests before they are batched)."""

    def __init__(self, inner: LanguageModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def requests_of(session: Session) -> list[Request]:
    """The requests the experiment makes, found by playing it on the stand-in (same runs,
    seeds, grid and settings) in a scratch directory."""
    from .progress import NoView
    from .runner import Experiment
    from .session import ExperimentConfig

    config: ExperimentConfig = session.config
    with tempfile.TemporaryDirectory(prefix="agentsim-batch-") as scratch:
        played = Experiment(dataclasses.replace(config, backend="stand-in", population="", resume=False, executor="local",
                                                out=Path(scratch) / "standin", llm=dataclasses.replace(config.llm, batch=False,
                                                max_calls=None, max_cost_usd=None)), NoView())
        played.open()
        recorder = Recorder(played.backends["stand-in"])
        played.backends = {"stand-in": recorder}
        await played.run()
        return recorder.requests


def innermost(model: Any) -> Any:
    while getattr(model, "inner", None) is not None:
        model = model.inner
    return model


async def prefetch_batches(session: Session, progress: Callable[[str], None]) -> int:
    """Answer the experiment's first requests through its backend's batch API, into the response
    cache; returns how many were submitted now."""
    from .llm.batches import first_requests

    ((_, stack),) = session.backends.items()
    requests = first_requests(await requests_of(session))
    progress(f"--batch: {len(requests)} requests found by playing the experiment on the stand-in")
    return await prefetch_into(stack, requests, poll_s=session.config.llm.batch_poll_s,
                               attempts=session.config.llm.retry.max_attempts, progress=progress)


async def prefetch_into(stack: LanguageModel, requests: Iterable[Request], *, poll_s: float, attempts: int,
                        progress: Callable[[str], None]) -> int:
    """Answer `requests` through the batch API of the provider inside `stack` (one backend's
    stack, llm/stack.py) into its response cache, reserved and settled in its budget, so that
    asking them through `stack` afterwards serves each as an ordinary call at half price;
    returns how many were submitted now. The run's `--batch` and the `comprehension` and
    `check-model` commands' share this."""
    from .llm.accounting import AccountedModel
    from .llm.batches import prefetch
    from .llm.cache import CachedModel
    from .llm.stack import layer

    cached, accounted = layer(stack, CachedModel), layer(stack, AccountedModel)
    if not isinstance(cached, CachedModel) or not isinstance(accounted, AccountedModel):
        raise BackendSpecError("--batch keeps the batches' answers in the response cache; drop --no-cache")
    model, sources = accounted.model, accounted.prices
    bound = price_for(model, sources) or FREE

    def price(completion: Completion) -> float:
        return answer_cost(model, completion, sources)

    try:
        return await prefetch(requests, backend=innermost(stack), identity=cached.identity, store=cached.store,
                              budget=accounted.budget, price=price, estimate=lambda request: reservation(bound, request),
                              progress=progress, poll_s=poll_s, attempts=attempts)
    except BackendError as error:  # batches that failed for good, a key refused: one line and exit 3, as a run's call
        raise BackendFailedError(redact(str(error))) from None
