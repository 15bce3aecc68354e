"""The repeated Prisoner's Dilemma between LLM agents with public reputations (indirect
reciprocity, image scoring), a game on the game layer (agentsim.gamekit):

    game.py       PrisonersDilemma, its parameters and its stand-in's settings
    commands.py   `python -m agentsim cooperation DIR`: cooperation per round and per model

Its report section, live figures, DataFrames, transcript and checkpoints are the layer's.
"""

from typing import TYPE_CHECKING

from .. import Family, lazy_exports, register_family

if TYPE_CHECKING:
    from .game import COOPERATE, DEFECT, DilemmaParams, DilemmaStandInSettings, PrisonersDilemma

__all__ = ["COOPERATE", "DEFECT", "DilemmaParams", "DilemmaStandInSettings", "PrisonersDilemma"]

lazy_exports(__name__, {".game": ("COOPERATE", "DEFECT", "DilemmaParams", "DilemmaStandInSettings", "PrisonersDilemma")})

register_family(Family(
    name="dilemma",
    summary="the repeated Prisoner's Dilemma between LLM agents with public reputations",
    scenario_names=("prisoners_dilemma",),  # PrisonersDilemma.name
    commands=f"{__name__}.commands",
    subcommands={"cooperation": "cooperation per round and per model of Prisoner's Dilemma runs"},
))
