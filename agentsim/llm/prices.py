"""What calls cost: US dollars per million prompt and completion tokens, by model.

The table is a starting point, not a promise (providers change prices): extend or override it
with a JSON file named by AGENTSIM_PRICES ({"model": [prompt_usd_per_mtok,
completion_usd_per_mtok]}), or `register_price` in a scenario file. Models with no price
(self-hosted TGI, vLLM, local, the stand-in) cost 0. A model name matches its longest
listed prefix, so dated snapshots (`gpt-4o-mini-2024-07-18`) find their family.
"""

from __future__ import annotations

import json
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
_MATCHED: dict[str, tuple[float, float]] = {}


def register_price(model: str, prompt_usd_per_mtok: float, completion_usd_per_mtok: float) -> None:
    PRICES[model] = (float(prompt_usd_per_mtok), float(completion_usd_per_mtok))
    _MATCHED.clear()


def _load_user_prices() -> None:
    global _loaded_from
    path = os.environ.get("AGENTSIM_PRICES")
    if not path or path == _loaded_from:
        return
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
        for model, (prompt, completion) in table.items():
            register_price(model, prompt, completion)
    except (OSError, ValueError, TypeError) as error:
        raise UserError(f"AGENTSIM_PRICES={path} is not a JSON price table ({type(error).__name__}); "
                        f'write {{"model": [prompt_usd_per_mtok, completion_usd_per_mtok]}}') from None
    _loaded_from = path


def price_of(model: str) -> tuple[float, float]:
    _load_user_prices()
    price = _MATCHED.get(model)
    if price is None:
        best = ""
        for name in PRICES:
            if model.startswith(name) and len(name) > len(best):
                best = name
        price = _MATCHED[model] = PRICES[best] if best else (0.0, 0.0)
    return price


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    prompt, completion = price_of(model)
    return (prompt * prompt_tokens + completion * completion_tokens) / 1e6
