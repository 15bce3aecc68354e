"""GovSim's commons (Piatti et al. 2024): fishing, pasture and pollution as one scenario.

    game.py        the scenario: the month's steps on the common scheduler
    params.py      its parameters
    prompts.py     GovSim's prompts, with each resource's words
    situations.py  what each prompt is rendered from (the store's call context)
    parser.py      reading replies
    memory.py      memories and their retrieval (recency, importance, relevance)
    standin.py     the stand-in's rule
    metrics.py     survival, gain, efficiency, equality, over-usage; Kaplan-Meier
    state.py       the run's state between steps
    report.py      the report section (resource over time, survival curves, Table 2)
    transcript.py  a run's conversation, month by month
"""

from .. import Family, register_family
from .game import CommonsGame, allocate
from .memory import MemoryItem
from .metrics import MonthRecord
from .params import CommonsParams
from .standin import CommonsStandIn, CommonsStandInSettings
from .state import CommonsState, StepLog, StepStats

__all__ = ["CommonsGame", "CommonsParams", "CommonsStandIn", "CommonsStandInSettings", "allocate"]


register_family(Family(
    name="commons",
    summary="GovSim's commons (Piatti et al. 2024): fishing, pasture and pollution",
    scenario_names=(CommonsGame.name,),
    commands=f"{__name__}.commands",
    report_sections=(f"{__name__}.report",),
    checkpoint_classes=(MonthRecord, StepStats, StepLog, CommonsState, MemoryItem),
))
