"""What calls cost: US dollars per million tokens, by model, as the provider bills them.

Prices come from `genai-prices` (a maintained table of the hosted models' input, output and
cached-input prices, shipped as data inside the package: no network), looked up at the
provider that bills the call: the one genai-prices knows at the backend's base URL (Groq,
Together, DeepSeek, ... speak OpenAI's protocol), else the provider's own
(llm/providers.py, `Provider.prices`). `AGENTSIM_PRICES` names a JSON file that overrides or
extends it, and `register_price` does the same from a scenario file:

    {"MODEL": [input_usd_per_mtok, output_usd_per_mtok]}
    {"MODEL": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75,
               "tiers": [{"above": 200000, "input": 6.0, "output": 22.5, "cache_read": 0.6, "cache_write": 7.5}]}}

A model name in those matches its longest listed prefix, so dated snapshots
(`gpt-4o-mini-2024-07-18`) find their family. Prices are finite and >= 0. A model with no
price (self-hosted TGI, vLLM, local, the stand-in) costs 0 in the accounts; under `--max-cost`
it is refused at start-up (`priced`), since a budget that counts it as free would not be
hard: give it a price, 0 for a server you run yourself.

A tiered price is billed as genai-prices' `calc_price` bills it: a request whose input tokens
(fresh, cached and written together) are past a tier's start pays that tier's rates on all its
tokens, input and output; every other request pays the base rates (`Price.at`). Each request is
priced at its own tier: the recorded cost, the budget's reservation and settlement, the
estimate (call by call) and the price recorded with the experiment (its tiers listed).

Cached input is billed as the provider bills it: OpenAI's cached prompt tokens
(`usage.prompt_tokens_details.cached_tokens`) at its cached-input price, Anthropic's
`cache_read_input_tokens` at a tenth of the input price and `cache_creation_input_tokens`
above it (`Price.cost`). Every price says where it came from (`Price.source`), and the
experiment records the price of each model it paid for.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UserError
from .providers import discover

_RATES = ("input_usd_per_mtok", "output_usd_per_mtok", "cache_read_usd_per_mtok", "cache_write_usd_per_mtok")


def _check_rates(owner: Any) -> None:
    for name in _RATES:
        value = getattr(owner, name)
        if value is None and name.startswith("cache"):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value >= 0):
            raise UserError(f"a price's {name} must be a finite number >= 0 of US dollars per million tokens "
                            f"(got {value!r})")


@dataclass(frozen=True, kw_only=True)
class PriceTier:
    """The rates of a request whose input tokens are more than `above` (all its tokens)."""

    above: int
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cache_read_usd_per_mtok: float | None = None
    cache_write_usd_per_mtok: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.above, bool) or not isinstance(self.above, int) or self.above < 0:
            raise UserError(f"a price tier starts above a whole number of input tokens >= 0 (got {self.above!r})")
        _check_rates(self)


@dataclass(frozen=True, kw_only=True)
class Price:
    """A model's price in US dollars per million tokens: its base rates and, for a tiered
    model, the rates past each tier's start (`tiers`, by `above`). A cache price of None means
    the provider bills that input as ordinary input."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cache_read_usd_per_mtok: float | None = None
    cache_write_usd_per_mtok: float | None = None
    tiers: tuple[PriceTier, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        _check_rates(self)
        starts = [tier.above for tier in self.tiers]
        if starts != sorted(set(starts)):
            raise UserError(f"a price's tiers start at distinct input token counts, in order (got {starts})")

    @property
    def free(self) -> bool:
        return not any(getattr(rates, name) for rates in (self, *self.tiers) for name in _RATES)

    def at(self, input_tokens: int) -> Price:
        """The flat rates a request with `input_tokens` of input pays: its tier's, or the base."""
        tier = next((tier for tier in reversed(self.tiers) if input_tokens > tier.above), None)
        if tier is None:
            return self if not self.tiers else replace(self, tiers=())
        return Price(**{name: getattr(tier, name) for name in _RATES}, source=self.source)

    def cost(self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float:
        """What one request is billed: `prompt_tokens` counts every input token, of which
        `cached_tokens` were read from the provider's prompt cache and `cache_write_tokens`
        written to it; all at the rates of the tier its input tokens fall in."""
        rates = self.at(prompt_tokens) if self.tiers else self
        cached = max(0, min(cached_tokens, prompt_tokens))
        written = max(0, min(cache_write_tokens, prompt_tokens - cached))
        fresh = prompt_tokens - cached - written
        read_price = rates.input_usd_per_mtok if rates.cache_read_usd_per_mtok is None else rates.cache_read_usd_per_mtok
        write_price = rates.input_usd_per_mtok if rates.cache_write_usd_per_mtok is None else rates.cache_write_usd_per_mtok
        return (rates.input_usd_per_mtok * fresh + read_price * cached + write_price * written
                + rates.output_usd_per_mtok * completion_tokens) / 1e6

    def most(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The most a request of at most these tokens can be billed, however its input is
        cached: every input token at the dearest way input is billed (a cache write costs more
        than plain input), at the tier of `prompt_tokens` (a request with fewer tokens pays a
        tier no dearer)."""
        rates = self.at(prompt_tokens) if self.tiers else self
        dearest = max(rates.input_usd_per_mtok, rates.cache_write_usd_per_mtok or 0.0)
        return (dearest * prompt_tokens + rates.output_usd_per_mtok * completion_tokens) / 1e6

    def as_dict(self) -> dict[str, Any]:
        document = asdict(self)
        document["tiers"] = [asdict(tier) for tier in self.tiers]
        return document


FREE = Price(input_usd_per_mtok=0.0, output_usd_per_mtok=0.0, source="none")

# Prices given by the user (AGENTSIM_PRICES, register_price): model name (a prefix) -> price.
USER_PRICES: dict[str, Price] = {}

_loaded_from: str | None = None
# Each model name's price once matched: the lookup ran on every answer. Cleared whenever a
# price is registered (change prices through `register_price`, not USER_PRICES directly).
_MATCHED: dict[tuple[str, tuple[str, ...] | None], Price | None] = {}


PRICES_HELP = ('AGENTSIM_PRICES=FILE.json with {"MODEL": [input_usd_per_mtok, output_usd_per_mtok]} '
               '(0, 0 for a server you run yourself)')


def register_price(model: str, prompt_usd_per_mtok: float, completion_usd_per_mtok: float, *,
                   cache_read_usd_per_mtok: float | None = None, cache_write_usd_per_mtok: float | None = None,
                   tiers: list[dict[str, Any]] | tuple[PriceTier, ...] = (), source: str = "register_price") -> None:
    """Price `model` (and the models whose names begin with it). `tiers`: the rates past an
    input size, as {"above": TOKENS, "input": ..., "output": ..., "cache_read": ..., "cache_write": ...}."""
    if not model:
        raise UserError("a price needs a model name (an empty one would price every model)")
    numbers = _rates(model, (prompt_usd_per_mtok, completion_usd_per_mtok, cache_read_usd_per_mtok,
                             cache_write_usd_per_mtok))
    steps = []
    for tier in tiers:
        if isinstance(tier, PriceTier):
            steps.append(tier)
            continue
        if not isinstance(tier, dict) or set(tier) - {"above", "input", "output", "cache_read", "cache_write"} or \
                not {"above", "input", "output"} <= set(tier):
            raise UserError(f"a tier of the price of '{model}' is {{\"above\": TOKENS, \"input\": ..., \"output\": ...}} "
                            f"with optional cache_read and cache_write (got {tier!r})")
        rates = _rates(model, (tier["input"], tier["output"], tier.get("cache_read"), tier.get("cache_write")))
        steps.append(PriceTier(above=tier["above"], input_usd_per_mtok=rates[0] or 0.0, output_usd_per_mtok=rates[1] or 0.0,
                               cache_read_usd_per_mtok=rates[2], cache_write_usd_per_mtok=rates[3]))
    USER_PRICES[model] = Price(input_usd_per_mtok=numbers[0] or 0.0, output_usd_per_mtok=numbers[1] or 0.0,
                               cache_read_usd_per_mtok=numbers[2], cache_write_usd_per_mtok=numbers[3],
                               tiers=tuple(sorted(steps, key=lambda tier: tier.above)), source=source)
    _MATCHED.clear()


def _rates(model: str, values: tuple[Any, Any, Any, Any]) -> list[float | None]:
    numbers: list[float | None] = []
    for value in values:
        if value is None and len(numbers) >= 2:
            numbers.append(None)
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not (math.isfinite(number) and number >= 0):
            raise UserError(f"the price of '{model}' must be finite numbers >= 0 of US dollars per million tokens "
                            f"(got {values[0]!r}, {values[1]!r})")
        numbers.append(number)
    return numbers


def load_user_prices() -> None:
    """Read AGENTSIM_PRICES if it names another file than last time. Each experiment calls it
    as it opens; a price lookup calls it only for a model it has not matched yet (an
    environment read per lookup was a seventh of the engine's CPU per call)."""
    global _loaded_from
    path = os.environ.get("AGENTSIM_PRICES")
    if not path or path == _loaded_from:
        return
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = [(str(model), _price_fields(value)) for model, value in table.items()]
    except (OSError, ValueError, TypeError, AttributeError, KeyError) as error:
        raise UserError(f"AGENTSIM_PRICES={path} is not a JSON price table ({type(error).__name__}); "
                        f'write {{"model": [input_usd_per_mtok, output_usd_per_mtok]}} or '
                        f'{{"model": {{"input": ..., "output": ..., "cache_read": ..., "cache_write": ..., '
                        f'"tiers": [...]}}}}') from None
    for model, fields in entries:
        try:
            register_price(model, *fields[:2], cache_read_usd_per_mtok=fields[2], cache_write_usd_per_mtok=fields[3],
                           tiers=fields[4], source=f"AGENTSIM_PRICES={path}")
        except UserError as error:
            raise UserError(f"AGENTSIM_PRICES={path}: {error}") from None
    _loaded_from = path


def _price_fields(value: Any) -> tuple[Any, Any, Any, Any, Any]:
    if isinstance(value, dict):
        unknown = set(value) - {"input", "output", "cache_read", "cache_write", "tiers"}
        if unknown:
            raise KeyError(", ".join(sorted(unknown)))
        tiers = value.get("tiers") or []
        if not isinstance(tiers, list):
            raise TypeError("tiers")
        return value["input"], value["output"], value.get("cache_read"), value.get("cache_write"), tiers
    prompt, completion = value
    return prompt, completion, None, None, []


def price_for(model: str, providers: tuple[str, ...] | None = None) -> Price | None:
    """The model's price: the user's (its longest matching prefix), else genai-prices' at the
    first of `providers` (genai-prices provider ids) that prices it; None when neither has
    one. `providers` None: every provider agentsim knows a genai-prices id of (llm/providers.py)."""
    key = (model, providers)
    if key in _MATCHED:
        return _MATCHED[key]
    load_user_prices()
    best = max((name for name in USER_PRICES if model.startswith(name)), key=len, default=None)
    if providers is None:
        providers = tuple(dict.fromkeys(found.prices for found in discover().values() if found.prices))
    price = _MATCHED[key] = USER_PRICES[best] if best is not None else _published(model, providers)
    return price


def _published(model: str, providers: tuple[str, ...]) -> Price | None:
    if not model:
        return None
    from genai_prices import __version__, data_snapshot

    snapshot = data_snapshot.get_snapshot()
    for provider in providers:
        try:
            _, info = snapshot.find_provider_model(model, None, provider, None)
        except LookupError:
            continue
        prices = info.get_prices(datetime.now(tz=UTC))
        rates = [getattr(prices, key, None) for key in ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")]
        if rates[0] is None or rates[1] is None:
            continue  # a model billed otherwise than per token (images, audio): not one agentsim can price
        starts = sorted({tier.start for rate in rates for tier in (getattr(rate, "tiers", None) or ())})
        tiers = tuple(PriceTier(above=start, **dict(zip(_RATES, (_rate_at(rate, start + 1) for rate in rates),
                                                        strict=True)))  # type: ignore[arg-type]
                      for start in starts)
        return Price(**dict(zip(_RATES, (_rate_at(rate, 0) for rate in rates), strict=True)),  # type: ignore[arg-type]
                     tiers=tiers, source=f"genai-prices {__version__} ({provider}: {info.id})")
    return None


def _rate_at(value: Any, input_tokens: int) -> float | None:
    """A genai-prices rate for a request of `input_tokens` input tokens (its tier, as
    `calc_price` picks it: the last tier whose start the input is past)."""
    if value is None:
        return None
    tiers = getattr(value, "tiers", None)
    if tiers is None:
        return float(value)
    applicable = value.base
    for tier in sorted(tiers, key=lambda tier: tier.start):
        if input_tokens > tier.start:
            applicable = tier.price
    return float(applicable)


def price_of(model: str, providers: tuple[str, ...] | None = None) -> tuple[float, float]:
    """The model's base input and output price (0, 0 when it has none)."""
    price = price_for(model, providers) or FREE
    return price.input_usd_per_mtok, price.output_usd_per_mtok


def priced(model: str, providers: tuple[str, ...] | None = None) -> bool:
    """Whether `model` has a price (its own, or its family's)."""
    return price_for(model, providers) is not None


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0,
             cache_write_tokens: int = 0, providers: tuple[str, ...] | None = None) -> float:
    return (price_for(model, providers) or FREE).cost(prompt_tokens, completion_tokens, cached_tokens=cached_tokens,
                                                      cache_write_tokens=cache_write_tokens)
