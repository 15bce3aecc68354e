"""What a naming-game agent sees when asked, shared by the game and its stand-in rule."""

from __future__ import annotations

from typing import NamedTuple

Memory = tuple[str | None, str | None, int]  # own name, partner's name, payoff


class NamingSituation(NamedTuple):
    """What an agent sees when asked: the options in the order shown, and its memory."""

    options: tuple[str, ...]
    memory: tuple[Memory, ...]
