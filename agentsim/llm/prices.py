"""What calls cost: US dollars per million tokens, by model, as the provider bills them.

Prices come from `genai-prices` (a maintained table of the hosted models' input, output and
cached-input prices, shipped as data inside the package: no network), for the providers
agentsim bills for (OpenAI's and Anthropic's models). `AGENTSIM_PRICES` names a JSON file
that overrides or extends it, and `register_price` does the same from a scenario file:

    {"MODEL": [input_usd_per_mtok, output_usd_per_mtok]}
    {"MODEL": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}}

A model name in those matches its longest listed prefix, so dated snapshots
(`gpt-4o-mini-2024-07-18`) find their family. Prices are finite and >= 0. A model with no
price (self-hosted TGI, vLLM, local, the stand-in) costs 0 in the accounts; under `--max-cost`
it is refused at start-up (`priced`), since a budget that counts it as free would not be
hard: give it a price, 0 for a server you run yourself.

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
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UserError

# The providers whose published prices genai-prices carries and agentsim bills for. A model
# of another provider (a server of your own) has no price unless you give it one.
GENAI_PROVIDERS = ("openai", "anthropic")


@dataclass(frozen=True, kw_only=True)
class Price:
    """A model's price in US dollars per million tokens. A cache price of None means the
    provider bills that input as ordinary input."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cache_read_usd_per_mtok: float | None = None
    cache_write_usd_per_mtok: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("input_usd_per_mtok", "output_usd_per_mtok", "cache_read_usd_per_mtok", "cache_write_usd_per_mtok"):
            value = getattr(self, name)
            if value is None and name.startswith("cache"):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value >= 0):
                raise UserError(f"a price's {name} must be a finite number >= 0 of US dollars per million tokens "
                                f"(got {value!r})")

    @property
    def free(self) -> bool:
        return not any((self.input_usd_per_mtok, self.output_usd_per_mtok, self.cache_read_usd_per_mtok,
                        self.cache_write_usd_per_mtok))

    def cost(self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float:
        """What an answer is billed: `prompt_tokens` counts every input token, of which
        `cached_tokens` were read from the provider's prompt cache and `cache_write_tokens`
        written to it."""
        cached = max(0, min(cached_tokens, prompt_tokens))
        written = max(0, min(cache_write_tokens, prompt_tokens - cached))
        fresh = prompt_tokens - cached - written
        read_price = self.input_usd_per_mtok if self.cache_read_usd_per_mtok is None else self.cache_read_usd_per_mtok
        write_price = self.input_usd_per_mtok if self.cache_write_usd_per_mtok is None else self.cache_write_usd_per_mtok
        return (self.input_usd_per_mtok * fresh + read_price * cached + write_price * written
                + self.output_usd_per_mtok * completion_tokens) / 1e6

    def most_per_input_token(self) -> float:
        """The dearest way an input token can be billed (a budget reserves at it)."""
        return max(self.input_usd_per_mtok, self.cache_write_usd_per_mtok or 0.0)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


FREE = Price(input_usd_per_mtok=0.0, output_usd_per_mtok=0.0, source="none")

# Prices given by the user (AGENTSIM_PRICES, register_price): model name (a prefix) -> price.
USER_PRICES: dict[str, Price] = {}

_loaded_from: str | None = None
# Each model name's price once matched: the lookup ran on every answer. Cleared whenever a
# price is registered (change prices through `register_price`, not USER_PRICES directly).
_MATCHED: dict[str, Price | None] = {}


PRICES_HELP = ('AGENTSIM_PRICES=FILE.json with {"MODEL": [input_usd_per_mtok, output_usd_per_mtok]} '
               '(0, 0 for a server you run yourself)')


def register_price(model: str, prompt_usd_per_mtok: float, completion_usd_per_mtok: float, *,
                   cache_read_usd_per_mtok: float | None = None, cache_write_usd_per_mtok: float | None = None,
                   source: str = "register_price") -> None:
    if not model:
        raise UserError("a price needs a model name (an empty one would price every model)")
    numbers: list[float | None] = []
    for value in (prompt_usd_per_mtok, completion_usd_per_mtok, cache_read_usd_per_mtok, cache_write_usd_per_mtok):
        if value is None and len(numbers) >= 2:
            numbers.append(None)
            continue
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not (math.isfinite(number) and number >= 0):
            raise UserError(f"the price of '{model}' must be finite numbers >= 0 of US dollars per million tokens "
                            f"(got {prompt_usd_per_mtok!r}, {completion_usd_per_mtok!r})")
        numbers.append(number)
    USER_PRICES[model] = Price(input_usd_per_mtok=numbers[0] or 0.0, output_usd_per_mtok=numbers[1] or 0.0,
                               cache_read_usd_per_mtok=numbers[2], cache_write_usd_per_mtok=numbers[3], source=source)
    _MATCHED.clear()


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
                        f'{{"model": {{"input": ..., "output": ..., "cache_read": ..., "cache_write": ...}}}}') from None
    for model, fields in entries:
        try:
            register_price(model, *fields[:2], cache_read_usd_per_mtok=fields[2], cache_write_usd_per_mtok=fields[3],
                           source=f"AGENTSIM_PRICES={path}")
        except UserError as error:
            raise UserError(f"AGENTSIM_PRICES={path}: {error}") from None
    _loaded_from = path


def _price_fields(value: Any) -> tuple[Any, Any, Any, Any]:
    if isinstance(value, dict):
        unknown = set(value) - {"input", "output", "cache_read", "cache_write"}
        if unknown:
            raise KeyError(", ".join(sorted(unknown)))
        return value["input"], value["output"], value.get("cache_read"), value.get("cache_write")
    prompt, completion = value
    return prompt, completion, None, None


def price_for(model: str) -> Price | None:
    """The model's price: the user's (its longest matching prefix), else genai-prices' for an
    OpenAI or Anthropic model; None when neither has one."""
    if model in _MATCHED:
        return _MATCHED[model]
    load_user_prices()
    best = max((name for name in USER_PRICES if model.startswith(name)), key=len, default=None)
    price = _MATCHED[model] = USER_PRICES[best] if best is not None else _published(model)
    return price


def _published(model: str) -> Price | None:
    if not model:
        return None
    from genai_prices import __version__, data_snapshot

    snapshot = data_snapshot.get_snapshot()
    for provider in GENAI_PROVIDERS:
        try:
            _, info = snapshot.find_provider_model(model, None, provider, None)
        except LookupError:
            continue
        prices = info.get_prices(datetime.now(tz=UTC))
        values = [_per_mtok(getattr(prices, key, None)) for key in ("input_mtok", "output_mtok", "cache_read_mtok",
                                                                    "cache_write_mtok")]
        if values[0] is None or values[1] is None:
            continue  # a model billed otherwise than per token (images, audio): not one agentsim can price
        return Price(input_usd_per_mtok=values[0], output_usd_per_mtok=values[1], cache_read_usd_per_mtok=values[2],
                     cache_write_usd_per_mtok=values[3], source=f"genai-prices {__version__} ({provider}: {info.id})")
    return None


def _per_mtok(value: Any) -> float | None:
    """A genai-prices price as a float; a tiered one (a dearer rate past a context length) at
    its dearest tier, so that a budget never counts a call as cheaper than it may be billed."""
    if value is None:
        return None
    tiers = getattr(value, "tiers", None)
    if tiers is not None:
        return float(max([value.base, *(tier.price for tier in tiers)]))
    return float(value)


def price_of(model: str) -> tuple[float, float]:
    """The model's input and output price (0, 0 when it has none)."""
    price = price_for(model) or FREE
    return price.input_usd_per_mtok, price.output_usd_per_mtok


def priced(model: str) -> bool:
    """Whether `model` has a price (its own, or its family's)."""
    return price_for(model) is not None


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0,
             cache_write_tokens: int = 0) -> float:
    return (price_for(model) or FREE).cost(prompt_tokens, completion_tokens, cached_tokens=cached_tokens,
                                           cache_write_tokens=cache_write_tokens)
