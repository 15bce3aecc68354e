"""The repeated Prisoner's Dilemma between LLM agents with public reputations (indirect
reciprocity, image scoring), written against the public extension points only
(docs/writing-a-game.md walks through it):

    params.py     DilemmaParams (payoffs T > R > P > S, reputation window, rounds) and the
                  stand-in's settings
    situation.py  what a player sees (DilemmaView) and keeps (Play: its memory, checkpointed)
    codec.py      the prompt, reading C or D, the reminder, the recorded fallback, the store's encoding
    game.py       the rules (PrisonersDilemma): random matchings, payoffs, memories, metrics
    standin.py    the stand-in's rule: cooperate with a partner of good reputation, tremble
    metrics.py    cooperation per round and per model, payoffs, fallbacks; the live figures
    report.py     the report section (registered with `python -m agentsim report`)
    commands.py   `python -m agentsim cooperation DIR`
"""

from typing import TYPE_CHECKING

from .. import Family, lazy_exports, register_family

if TYPE_CHECKING:
    from .codec import DilemmaCodec
    from .game import PrisonersDilemma
    from .metrics import DilemmaMetrics
    from .metrics import RoundTally as RoundTally
    from .metrics import Tally as Tally
    from .params import ACTIONS, COOPERATE, DEFECT, DilemmaParams, DilemmaStandInSettings
    from .situation import DilemmaView, Play
    from .standin import DilemmaStandIn

__all__ = ["ACTIONS", "COOPERATE", "DEFECT", "DilemmaCodec", "DilemmaMetrics", "DilemmaParams", "DilemmaStandIn",
           "DilemmaStandInSettings", "DilemmaView", "Play", "PrisonersDilemma"]

lazy_exports(__name__, {
    ".codec": ("DilemmaCodec",),
    ".game": ("PrisonersDilemma",),
    ".metrics": ("DilemmaMetrics", "RoundTally", "Tally"),
    ".params": ("ACTIONS", "COOPERATE", "DEFECT", "DilemmaParams", "DilemmaStandInSettings"),
    ".situation": ("DilemmaView", "Play"),
    ".standin": ("DilemmaStandIn",),
})

register_family(Family(
    name="dilemma",
    summary="the repeated Prisoner's Dilemma between LLM agents with public reputations",
    scenario_names=("prisoners_dilemma",),  # PrisonersDilemma.name
    commands=f"{__name__}.commands",
    subcommands={"cooperation": "cooperation per round and per model of Prisoner's Dilemma runs"},
    report_sections=(f"{__name__}.report",),
    checkpoint_classes=(f"{__name__}.situation:Play", f"{__name__}.metrics:Tally", f"{__name__}.metrics:RoundTally",
                        f"{__name__}.metrics:DilemmaMetrics"),
))
