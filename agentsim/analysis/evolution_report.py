"""Registers the cultural-evolution section (Donor game, Stag Hunt) with `python -m agentsim
report`; the figures are built in `agentsim.games.evolution.report`."""

from __future__ import annotations

from ..games.evolution.report import applies, build_section
from .report import register_section

register_section("evolution", "Cultural evolution: Donor game and Stag Hunt", order=80,
                 applies=lambda context: applies(context.experiments))(build_section)
