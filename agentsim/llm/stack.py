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
REMOTE = frozenset({"openai", "anthropic", "tgi"})  # providers reached over the network: probed at start-up


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
    health = BackendHealth(spec.text, options.health, on_warning)
    model: LanguageModel = limiter(BackendGuard(backend, health, budget, model=spec.target), options.limits)
    if spec.provider in REMOTE and options.health.probe:
        model = StartupProbe(model, health, deadline_s=min(options.health.probe_deadline_s, options.retry.deadline_s))
    model = RetryingModel(model, options.retry, deadline=spec.provider in REMOTE)
    if options.cache:
        endpoint = str(getattr(backend, "endpoint", "") or "")
        identity = cache_identity(spec.provider, spec.target)  # a local model: its content, not its path
        model = CachedModel(model, response_store(options), provider=spec.provider, endpoint=endpoint,
                            model=identity, replay=options.replay)
        model = ChoiceDistributionModel(model, response_store(options), provider=spec.provider, endpoint=endpoint,
                                        model=identity, sample_locally=options.sample_locally)
    return AccountedModel(model, budget, model=spec.target, health=health)


def layer(model: LanguageModel, kind: type) -> object | None:
    """The wrapper of type `kind` inside `model`'s stack (for stats), or None."""
    layer: object | None = model
    while layer is not None:
        if isinstance(layer, kind):
            return layer
        layer = getattr(layer, "inner", None)
    return None
