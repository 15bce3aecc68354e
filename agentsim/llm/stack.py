"""The wrappers around a backend, composed in one place.

    Accounted( Choices( Cached( Retrying( Probe( Limited( Guard( provider ) ) ) ) ) ) )

From the outside in: accounting prices each answer; the choice-distribution cache keeps each
prompt's option distribution and, with `--sample-locally`, draws known prompts' answers from
it (llm/choices.py); the response cache answers what it has seen (a hit
costs no call, no retry, no slot); retries ask again after transient failures; the start-up
probe (llm/health.py) sends one tiny request through the limiter before a network backend's
first; the limiter admits each attempt (so a 429 shrinks the cap, a call waiting out its
backoff holds no slot, and the probe takes its turn under --rpm; `--deadline` bounds a call to
a network backend only: a call to a model in process waits its turn for it, llm/retries.py); the guard keeps the circuit
breaker and reserves each request in the budget before it is sent; the provider speaks HTTP
or runs the model. Each is a `LanguageModel`, tested alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .accounting import AccountedModel, Budget
from .base import LanguageModel
from .cache import CachedModel, ResponseStore, default_cache_path
from .choices import ChoiceDistributionModel
from .health import BackendGuard, BackendHealth, StartupProbe
from .limiter import LimitedModel, Limits
from .model_files import cache_identity
from .retries import RetryingModel

if TYPE_CHECKING:
    from .specs import BackendOptions, BackendSpec

_STORES: dict[str, ResponseStore] = {}


def response_store(options: BackendOptions) -> ResponseStore:
    path = options.cache_path or default_cache_path()
    key = str(path.resolve())
    store = _STORES.get(key)
    if store is None:
        store = _STORES[key] = ResponseStore(path, max_bytes=options.cache_max_bytes)
    store.max_bytes = options.cache_max_bytes  # the latest experiment's bound (the API runs several in one process)
    return store


Limiter = Callable[[LanguageModel, Limits], LanguageModel]


def wrap(backend: LanguageModel, spec: BackendSpec, options: BackendOptions, budget: Budget,
         on_warning: Callable[[str], None] | None = None, limiter: Limiter = LimitedModel) -> LanguageModel:
    """The stack around `backend`; `limiter` makes its limiter layer (a Ray worker's admits
    through the sweep's cluster-wide one, agentsim/distributed/limits.py)."""
    provider = spec.provider_info  # what the provider is (llm/providers.py)
    health = BackendHealth(spec.text, options.health, on_warning)
    prices = price_sources(spec, options)
    model: LanguageModel = limiter(BackendGuard(backend, health, budget, model=spec.target, prices=prices),
                                   options.limits)
    if provider.remote and options.health.probe:  # reached over the network: probed at start-up
        model = StartupProbe(model, health, deadline_s=min(options.health.probe_deadline_s, options.retry.deadline_s))
    model = RetryingModel(model, options.retry, deadline=provider.remote)
    if options.cache:
        endpoint = str(getattr(backend, "endpoint", "") or "")
        identity = cache_identity(spec.provider, spec.target)  # a model in process: its content, not its path
        model = CachedModel(model, response_store(options), provider=spec.provider, endpoint=endpoint,
                            model=identity, replay=options.replay)
        model = ChoiceDistributionModel(model, response_store(options), provider=spec.provider, endpoint=endpoint,
                                        model=identity, sample_locally=options.sample_locally)
    return AccountedModel(model, budget, model=spec.target, health=health, prices=prices)


def price_sources(spec: BackendSpec, options: BackendOptions) -> tuple[str, ...]:
    """The genai-prices providers that price `spec`'s model where it is served (its base URL's
    provider, else its own: `Provider.price_sources`)."""
    base_url = (spec.base_url or options.base_url or "").split("|")[0].strip() or None
    return spec.provider_info.price_sources(base_url)



def layer(model: LanguageModel, kind: type) -> object | None:
    """The wrapper of type `kind` inside `model`'s stack (for stats), or None."""
    layer: object | None = model
    while layer is not None:
        if isinstance(layer, kind):
            return layer
        layer = getattr(layer, "inner", None)
    return None
