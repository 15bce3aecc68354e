"""`--batch`: an experiment whose calls are independent, asked through a batch API before it
plays (llm/batches.py says how). Here: which experiments may, and answering the requests found
by the stand-in's play (the runner plays it: `Experiment.rehearse`) into the response cache."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import BackendError, BackendFailedError, BackendSpecError
from .llm.accounting import AccountedModel, answer_cost, reservation
from .llm.base import Completion, LanguageModel, Request
from .llm.batches import first_requests, prefetch
from .llm.cache import CachedModel
from .llm.prices import FREE, price_for
from .llm.providers import batch_providers
from .llm.specs import parse_spec
from .llm.stack import layer
from .secrets import redact

if TYPE_CHECKING:
    from .scenario import Scenario


def refuse_unbatchable(scenarios: Sequence[Scenario[Any, Any, Any]], specs: Sequence[str]) -> None:
    """--batch only where every call can wait for none: one hosted backend, independent calls
    (`scenarios`: the experiment's, a grid's variants included; `specs`: its backends)."""
    dependent = sorted({type(scenario).__name__ for scenario in scenarios if not scenario.independent_calls})
    if dependent:
        raise BackendSpecError(f"--batch asks every call at once, and {', '.join(dependent)}'s calls depend on earlier "
                               f"answers (its agents remember); drop --batch (it is for the bias and strategy probes, and "
                               f"scenarios that set independent_calls = True)")
    require_batch_backend(specs)


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


def innermost(model: Any) -> Any:
    while getattr(model, "inner", None) is not None:
        model = model.inner
    return model


async def prefetch_batches(stack: LanguageModel, played: Sequence[Request], *, poll_s: float, attempts: int,
                           progress: Callable[[str], None]) -> int:
    """Answer the first of the requests the stand-in's play found (`played`) through the batch
    API of the experiment's one backend (`stack`), into the response cache; returns how many
    were submitted now."""
    requests = first_requests(list(played))
    progress(f"--batch: {len(requests)} requests found by playing the experiment on the stand-in")
    return await prefetch_into(stack, requests, poll_s=poll_s, attempts=attempts, progress=progress)


async def prefetch_into(stack: LanguageModel, requests: Iterable[Request], *, poll_s: float, attempts: int,
                        progress: Callable[[str], None]) -> int:
    """Answer `requests` through the batch API of the provider inside `stack` (one backend's
    stack, llm/stack.py) into its response cache, reserved and settled in its budget, so that
    asking them through `stack` afterwards serves each as an ordinary call at half price;
    returns how many were submitted now. The run's `--batch` and the `comprehension` and
    `check-model` commands' share this."""
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
