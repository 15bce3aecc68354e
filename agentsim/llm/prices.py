"""What calls cost: US dollars per million prompt and completion tokens, by model.

The table is a starting point, not a promise (providers change prices): extend or override it
with a JSON file named by AGENTSIM_PRICES ({"model": [prompt_usd_per_mtok,
completion_usd_per_mtok]}), or `register_price` in a scenario file. Prices are finite and
>= 0. A model name matches its longest listed prefix, so dated snapshots
(`gpt-4o-mini-2024-07-18`) find their family. A model with no price (self-hosted TGI, vLLM,
local, the stand-in) costs 0 in the accounts; under `--max-cost` it is refused at start-up
(`priced`), since a budget that counts it as free would not be hard: give it a price, 0 for a
server you run yourself.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from ..errors import UserError

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-haiku-4": (1.00, 5.00),
    "claude-opus-4": (15.00, 75.00),
}

_loaded_from: str | None = None
# Each model name's price once matched: the prefix search ran on every answer. Cleared whenever
# a price is registered (change prices through `register_price`, not PRICES directly).
_MATCHED: dict[str, tuple[float, float] | None] = {}


PRICES_HELP = ('AGENTSIM_PRICES=FILE.json with {"MODEL": [prompt_usd_per_mtok, completion_usd_per_mtok]} '
               '(0, 0 for a server you run yourself)')


def register_price(model: str, prompt_usd_per_mtok: float, completion_usd_per_mtok: float) -> None:
    if not model:
        raise UserError("a price needs a model name (an empty one would price every model)")
    prices = []
    for value in (prompt_usd_per_mtok, completion_usd_per_mtok):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not (math.isfinite(number) and number >= 0):
            raise UserError(f"the price of '{model}' must be two finite numbers >= 0 of US dollars per million tokens "
                            f"(got {prompt_usd_per_mtok!r}, {completion_usd_per_mtok!r})")
        prices.append(number)
    PRICES[model] = (prices[0], prices[1])
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
        entries = [(str(model), prompt, completion) for model, (prompt, completion) in table.items()]
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise UserError(f"AGENTSIM_PRICES={path} is not a JSON price table ({type(error).__name__}); "
                        f'write {{"model": [prompt_usd_per_mtok, completion_usd_per_mtok]}}') from None
    for model, prompt, completion in entries:
        try:
            register_price(model, prompt, completion)
        except UserError as error:
            raise UserError(f"AGENTSIM_PRICES={path}: {error}") from None
    _loaded_from = path


def price_of(model: str) -> tuple[float, float]:
    """The model's price (0, 0 when it has none)."""
    return _match(model) or (0.0, 0.0)


def priced(model: str) -> bool:
    """Whether the table gives `model` a price (its own, or its family's)."""
    return _match(model) is not None


def _match(model: str) -> tuple[float, float] | None:
    if model in _MATCHED:
        return _MATCHED[model]
    load_user_prices()
    best = max((name for name in PRICES if model.startswith(name)), key=len, default=None)
    price = _MATCHED[model] = PRICES[best] if best is not None else None
    return price


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    prompt, completion = price_of(model)
    return (prompt * prompt_tokens + completion * completion_tokens) / 1e6
