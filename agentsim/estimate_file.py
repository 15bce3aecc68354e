"""DIR/estimate.json: what `python -m agentsim estimate --out DIR` expected of an experiment,
written by the estimate (agentsim/estimate.py) and read back by a run recorded into DIR (its
session shows it beside what was spent). Here, below both, so that the session reads the file
without importing the command that writes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ESTIMATE_FILE = "estimate.json"
MAX_BYTES = 10 * 2**20  # an estimate is a few kilobytes: anything larger is not one


def read(directory: Path) -> dict[str, Any] | None:
    """DIR/estimate.json as plain data (checked: a dict of the expected shape), or None."""
    path = directory / ESTIMATE_FILE
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("totals"), dict):
        return None
    return {key: document.get(key) for key in ("scenario", "totals", "cost_usd", "cost_usd_upper", "wall_s",
                                               "wall_s_upper", "tokenizer", "notes")}
