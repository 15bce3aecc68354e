"""Registers the GovSim commons' section with `python -m agentsim report` (the section itself
lives with the game, in agentsim/games/commons/report.py)."""

from __future__ import annotations

from ..games.commons.report import commons_applies, commons_section
from .report import register_section

register_section("commons", "GovSim: governance of the commons", order=80, applies=commons_applies)(commons_section)
