"""The class GAMA-Bench's games record as their scenario class: the layer's engine around a bare
game, reading its calls with GAMA-Bench's codec, so the transcript of a GAMA-Bench-exact run
rebuilds the runner's conversation from the store alone (no scenario file, no checkout), and
any other run reads as the layer's (agentsim/games/gamekit/recorded.py)."""

from __future__ import annotations

from functools import cached_property

from ...gamekit.engine import GameEngine
from ...gamekit.game import Game
from .codec import GamaCodec


class RecordedGamaGame(GameEngine):
    """A GAMA-Bench game's runs as the store keeps them."""

    game_class = Game

    @cached_property
    def codec(self) -> GamaCodec:
        return GamaCodec()
