"""What agentsim knows of each provider, in one table: one frozen `Provider` per spec prefix.

Every module that must know something of a provider asks its descriptor here, never a list
of its own: how its backend is built (`build`, imported only when a backend is made, so a
provider's SDK is imported by the runs that use it; a missing module is one line naming the
install extra that brings it), whether it is reached over the network (`remote`: probed at
start-up, bounded by `--deadline`, billed, so priced or refused under `--max-cost`) or runs
in this process (`in_process`: probed for readable replies before a run, named in the
response cache by its content), whether it has a batch API (`batch`), which genai-prices
provider prices its models (`prices`, or the provider genai-prices knows at the base URL it
is given: Groq, Together, ...), what a call is assumed to take (`latency_s`, the estimate's
figure when no call is timed), whether it takes a base URL and how several servers of one
model are named (`routes`), how its prompt cache bills (`prompt_cache`, the estimate's
model of it) and its offline tokenizer, if any (`tokenizer`).

The built-in providers are `stand-in`, `openai`, `anthropic`, `tgi` and `local`. Another
distribution adds one with no edit here: an entry point in the group `agentsim.backends`
whose name is the spec's prefix and whose object is its `Provider`:

    [agentsim.backends]
    echo = echo_backend:PROVIDER

A registry of this shape is Concordia's `contrib/language_models` (each provider imported
lazily, with a hint about the extra that brings it).
"""

from __future__ import annotations

import importlib
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..errors import BackendSpecError

if TYPE_CHECKING:
    from .base import LanguageModel, Message
    from .specs import BackendOptions, BackendSpec

ENTRY_POINT_GROUP = "agentsim.backends"
STAND_IN = "stand-in"  # the built-in stand-in's spec, every front door's default backend
_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")
_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*\Z")

Factory = Callable[["BackendSpec", "BackendOptions"], "LanguageModel"]


class PromptCache(Protocol):
    """A provider's prompt cache as the run will meet it, played call by call in the run's
    order (the estimate's model of it, llm/prompt_cache.py)."""

    def call(self, messages: Sequence[Message]) -> tuple[int, int]:
        """The prompt tokens of this call the provider reads from its cache and writes to it."""
        ...


# (model, a token count of a text, whether the client sets cache breakpoints) -> its cache
PromptCacheFactory = Callable[[str, Callable[[str], int], bool], PromptCache]
# a spec's target -> (a token count of a text, what counts), or None where no tokenizer is here
TokenizerFactory = Callable[[str], "tuple[Callable[[str], int], str] | None"]


@dataclass(frozen=True, kw_only=True)
class Provider:
    """One provider: everything agentsim needs to know of it (see the module's docstring).

    A reference may be given as the object itself or as "package.module:name", imported when
    first used (what keeps an SDK out of every start that does not use it)."""

    name: str  # the spec's prefix: `name:TARGET`
    summary: str  # one line: what it talks to
    target: str = "MODEL"  # what goes after the colon, in messages: MODEL, URL, MODEL_OR_PATH
    target_is_url: bool = False  # the target is a server's URL (checked as one; several joined by '|')
    build: Factory | str | None = None  # (spec, options) -> the bare backend; None: the stand-in's rules
    extra: str | None = None  # the install extra that brings its SDK (named when an import fails)
    stand_in: bool = False  # the built-in rule policy: answers in process with the game's rules
    remote: bool = False  # reached over the network: probed, --deadline, billed
    in_process: bool = False  # the model runs in this process: probed for readable replies, named by content
    base_url: bool = False  # takes --base-url and `name:MODEL@URL`
    routes: Literal["target", "base_url"] | None = None  # where several servers of one model are named ('|')
    batch: Callable[[Any], Any] | str | None = None  # bare backend -> its BatchClient (llm/batches.py)
    prices: str | None = None  # the genai-prices provider id that prices its models
    latency_s: float = 1.0  # a call's assumed latency, where the estimate times none
    key_variable: str | None = None  # the environment variable holding its key
    prompt_cache: PromptCacheFactory | str | None = None  # how its prompt cache bills; None: it has none
    tokenizer: TokenizerFactory | str | None = None  # its models' tokenizer, offline; None: none here

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"a provider's name is a spec prefix: lower-case letters, digits, '-' and '_', "
                             f"beginning with a letter (got {self.name!r})")
        if self.remote and self.in_process:
            raise ValueError(f"provider {self.name!r}: a model is either reached over the network or run in process")
        if self.stand_in == (self.build is not None):
            raise ValueError(f"provider {self.name!r}: give `build`, how its backend is made (the stand-in alone has none)")
        if not (math.isfinite(self.latency_s) and self.latency_s >= 0):
            raise ValueError(f"provider {self.name!r}: latency_s must be a finite number of seconds >= 0")
        if self.routes == "base_url" and not self.base_url:
            raise ValueError(f"provider {self.name!r}: routes over base URLs needs base_url=True")
        if self.routes == "target" and not self.target_is_url:
            raise ValueError(f"provider {self.name!r}: routes over targets needs target_is_url=True")
        for field in ("build", "batch", "prompt_cache", "tokenizer"):
            value = getattr(self, field)
            if isinstance(value, str) and not _REFERENCE.match(value):
                raise ValueError(f"provider {self.name!r}: {field} is a callable or 'package.module:name' (got {value!r})")

    @property
    def billed(self) -> bool:
        """Whether its calls are paid for (a price is needed under --max-cost): a remote
        provider's are, a model in this process costs nothing but time."""
        return self.remote

    def backend(self, spec: BackendSpec, options: BackendOptions) -> LanguageModel:
        """The bare backend for `spec` (no wrappers: llm/stack.py adds them)."""
        factory = self._load("build", spec.text)
        if factory is None:
            raise BackendSpecError(f"backend '{spec.text}' is the stand-in: it is built from a game's rules")
        try:
            return factory(spec, options)
        except ModuleNotFoundError as error:  # an SDK imported by the factory itself
            raise self._missing(spec.text, error) from None

    def batch_client(self, backend: Any, spec_text: str) -> Any:
        """The batch protocol of a bare backend of this provider (llm/batches.BatchClient)."""
        make = self._load("batch", spec_text)
        if make is None:
            raise BackendSpecError(f"{spec_text} has no batch API; --batch is for {', '.join(batch_providers())} backends")
        return make(backend)

    def price_sources(self, base_url: str | None) -> tuple[str, ...]:
        """The genai-prices providers whose table prices this provider's models: the one
        genai-prices knows at `base_url` (a hosted API that speaks this provider's protocol:
        Groq, Together, ...), else its own; none for a provider that is not billed."""
        if not self.billed:
            return ()
        if base_url and self.base_url:
            hosted = provider_at(base_url)
            if hosted is not None:
                return (hosted,)
        return (self.prices,) if self.prices else ()

    def cache_of_prompts(self, model: str, count: Callable[[str], int], breakpoints: bool) -> PromptCache | None:
        """Its prompt cache, as the estimate plays it call by call; None where it has none."""
        make = self._load("prompt_cache", self.name)
        return None if make is None else make(model, count, breakpoints)

    def offline_tokenizer(self, target: str) -> tuple[Callable[[str], int], str] | None:
        """The model's own token count where its tokenizer is on this machine, and its name."""
        make = self._load("tokenizer", self.name)
        return None if make is None else make(target)

    def _load(self, field: str, spec_text: str) -> Any:
        value = getattr(self, field)
        if not isinstance(value, str):
            return value
        module, _, name = value.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as error:
            raise self._missing(spec_text, error) from None

    def _missing(self, spec_text: str, error: ModuleNotFoundError) -> BackendSpecError:
        install = f"pip install 'agentsim[{self.extra}]'" if self.extra else "install its package"
        return BackendSpecError(f"backend '{spec_text}' needs the module {error.name or 'its SDK'}, which is not "
                                f"installed: {install}")


# --- the built-in providers ------------------------------------------------------------------
BUILT_IN = (
    Provider(name=STAND_IN, summary="the built-in rule policy; no network", target="LABEL", stand_in=True,
             latency_s=0.0001),
    Provider(name="openai", summary="OpenAI, and any OpenAI-compatible server: vLLM, TGI's messages API",
             build="agentsim.llm.factories:openai", remote=True, base_url=True, routes="base_url",
             batch="agentsim.llm.batches:OpenAIBatches", prices="openai", latency_s=1.0, key_variable="OPENAI_API_KEY",
             prompt_cache="agentsim.llm.prompt_cache:OpenAIPromptCache"),
    Provider(name="anthropic", summary="Anthropic's Messages API", build="agentsim.llm.factories:anthropic", remote=True,
             base_url=True, routes="base_url", batch="agentsim.llm.batches:AnthropicBatches", prices="anthropic",
             latency_s=1.5, key_variable="ANTHROPIC_API_KEY",
             prompt_cache="agentsim.llm.prompt_cache:AnthropicPromptCache"),
    Provider(name="tgi", summary="TGI's native /generate", target="URL", target_is_url=True,
             build="agentsim.llm.factories:tgi", remote=True, routes="target", latency_s=0.5, key_variable="HF_TOKEN"),
    Provider(name="local", summary="a model in this process: SmolLM2 or a GGUF file (llama.cpp), transformers",
             target="MODEL_OR_PATH", build="agentsim.llm.factories:local", extra="local", in_process=True,
             latency_s=2.0, tokenizer="agentsim.llm.factories:local_tokenizer"),
)

TABLE: dict[str, Provider] = {provider.name: provider for provider in BUILT_IN}
UNAVAILABLE: dict[str, str] = {}  # entry points that failed to load: name -> why
_discovered = False


def register(provider: Provider) -> None:
    """Add a provider (a script's, a notebook's); an entry point does this by itself."""
    if provider.name in TABLE and TABLE[provider.name] != provider:
        raise ValueError(f"a provider named {provider.name!r} is registered already")
    TABLE[provider.name] = provider


def discover() -> dict[str, Provider]:
    """Every provider: the built-in ones and those of `agentsim.backends` entry points (loaded
    once). An entry point that fails to load is left out with one line on stderr: another
    distribution's bug must not stop the runs that do not use it."""
    global _discovered
    if _discovered:
        return TABLE
    _discovered = True
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name in TABLE:
            continue
        try:
            loaded = entry_point.load()
            if not isinstance(loaded, Provider) or loaded.name != entry_point.name:
                raise TypeError(f"{entry_point.value} is not a Provider named {entry_point.name!r}")
        except Exception as error:  # whatever another package raises, said in one line
            UNAVAILABLE[entry_point.name] = f"{type(error).__name__}: {error}"
            print(f"agentsim: the backend provider '{entry_point.name}' ({entry_point.value}, an '{ENTRY_POINT_GROUP}' "
                  f"entry point) fails to load ({UNAVAILABLE[entry_point.name]}); going on without it: fix or uninstall "
                  f"its package", file=sys.stderr)
            continue
        TABLE[loaded.name] = loaded
    return TABLE


def provider(name: str) -> Provider | None:
    """The provider a spec's prefix names, or None."""
    found = TABLE.get(name)
    if found is None and not _discovered:
        found = discover().get(name)
    return found


def provider_of(spec_text: str) -> Provider:
    """The provider of a backend spec's text (`openai:gpt-4o`, `stand-in`); a BackendSpecError
    naming the known ones if none is."""
    name = spec_text.strip().partition(":")[0].strip().lower()
    found = provider(name)
    if found is None:
        raise BackendSpecError(f"unknown backend '{spec_text}'; use one of: {', '.join(sorted(discover()))} "
                               f"(as provider:model where it needs one)")
    return found


def is_stand_in(spec_text: str) -> bool:
    """Whether a backend spec names the built-in stand-in (`stand-in`, `stand-in:LABEL`)."""
    found = provider(spec_text.strip().partition(":")[0].strip().lower())
    return found is not None and found.stand_in


def all_on_the_stand_in(label: str) -> bool:
    """Whether every agent of a recorded experiment answered on a stand-in provider (its
    backend label: one spec, or a population's `SPEC=COUNT,...` (llm/specs.parse_population);
    never rule agents): what the readers say of its answers."""
    specs = [part.rpartition("=")[0] or part for part in label.split(",")] if label else []
    return bool(specs) and all(is_stand_in(spec) for spec in specs)


def provider_at(url: str) -> str | None:
    """The genai-prices provider whose API lives at `url` (api.groq.com: groq), or None."""
    if url not in _HOSTS:
        from genai_prices import data_snapshot  # (its table is read by the first run that prices a model)

        _HOSTS[url] = next((provider.id for provider in data_snapshot.get_snapshot().providers
                            if provider.api_pattern and re.match(provider.api_pattern, url)), None)
    return _HOSTS[url]


_HOSTS: dict[str, str | None] = {}


def batch_providers() -> list[str]:
    """The providers with a batch API, as `name:` (for messages)."""
    return [f"{name}:" for name, found in discover().items() if found.batch is not None]
