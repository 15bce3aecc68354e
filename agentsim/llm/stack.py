"""The wrappers around a backend, composed in one place.

    Accounted( Cached( Retrying( Limited( provider ) ) ) )

From the outside in: accounting prices each answer and charges the budget; the cache answers
what it has seen (a hit costs no call, no retry, no slot); retries ask again after transient
failures; the limiter admits each attempt (so a 429 shrinks the cap, and a call waiting out
its backoff holds no slot); the provider speaks HTTP or runs the model. Each is a
`LanguageModel`, tested alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .accounting import AccountedModel, Budget
from .base import LanguageModel
from .cache import CachedModel, ResponseStore, default_cache_path
from .limiter import LimitedModel
from .retries import RetryingModel

if TYPE_CHECKING:
    from .specs import BackendOptions, BackendSpec

_STORES: dict[str, ResponseStore] = {}


def response_store(options: BackendOptions) -> ResponseStore:
    path = options.cache_path or default_cache_path()
    key = str(path.resolve())
    store = _STORES.get(key)
    if store is None:
        store = _STORES[key] = ResponseStore(path)
    return store


def wrap(backend: LanguageModel, spec: BackendSpec, options: BackendOptions, budget: Budget) -> LanguageModel:
    limited = LimitedModel(backend, options.limits)
    model: LanguageModel = RetryingModel(limited, options.retry)
    if options.cache:
        endpoint = str(getattr(backend, "endpoint", "") or "")
        model = CachedModel(model, response_store(options), provider=spec.provider, endpoint=endpoint,
                            model=spec.target, replay=options.replay)
    return AccountedModel(model, budget, model=spec.target)


def layer(model: LanguageModel, kind: type) -> object | None:
    """The wrapper of type `kind` inside `model`'s stack (for stats), or None."""
    while model is not None:
        if isinstance(model, kind):
            return model
        model = getattr(model, "inner", None)  # type: ignore[assignment]
    return None
