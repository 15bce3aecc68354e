"""The class every layer game records as its scenario class: `RecordedGame`.

A layer game keeps in the store everything its analysis reads: each call's prompt as rendered
(the `Ask`, so `transcript` and `Results.decisions(prompts=True)` rebuild the exact messages
with the layer's one codec) and each round's line (choices, payoffs, data: the report and the
DataFrames). So its runs name this class, which an installed, registered family provides,
rather than the game's own class in a scenario file: opening the results runs no code the
results name and needs no `--scenario FILE`. (What ran is the experiment's `scenario` name
and `scenario_file`.)
"""

from __future__ import annotations

from ...gamekit.engine import GameEngine
from ...gamekit.game import Game


class RecordedGame(GameEngine):
    """A layer game's runs as the store keeps them: the engine around a bare `Game`, whose
    codec reads the recorded calls."""

    game_class = Game
