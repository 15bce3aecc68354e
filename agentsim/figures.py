"""What the live view and the log lines show of a run, as a declared dataclass.

A game returns `LiveFigures` from its readout's `live_figures` (agentsim/parts.py); the live
view (live.py) renders its fields generically, in this order: a success rate with its
sparkline, bars of shares, then a game's own labelled lines. A field left at its default is not shown: a game without a notion
of success (the commons, the donor game) shows no success rate, not 0%.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class LiveFigures:
    """One run's figures now. `success_rate` (None: none shown) and `success_history` (the
    sparkline, oldest first); `shares` (a bar per name, largest first) under `shares_label`,
    with `shares_note` beneath; `lines`: (label, text) rows for anything else."""

    success_rate: float | None = None
    success_history: tuple[float, ...] = ()
    shares: Mapping[str, float] = field(default_factory=dict)
    shares_label: str = "names"
    shares_note: str = ""
    lines: tuple[tuple[str, str], ...] = ()
