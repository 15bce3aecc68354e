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

from typing import TYPE_CHECKING

from .. import Family, lazy_exports, register_family

if TYPE_CHECKING:
    from .game import CommonsGame, allocate
    from .memory import MemoryItem as MemoryItem
    from .metrics import MonthRecord as MonthRecord
    from .params import CommonsParams
    from .standin import CommonsStandIn, CommonsStandInSettings
    from .state import CommonsState as CommonsState
    from .state import StepLog as StepLog
    from .state import StepStats as StepStats

__all__ = ["CommonsGame", "CommonsParams", "CommonsStandIn", "CommonsStandInSettings", "allocate"]

lazy_exports(__name__, {
    ".game": ("CommonsGame", "allocate"),
    ".memory": ("MemoryItem",),
    ".metrics": ("MonthRecord",),
    ".params": ("CommonsParams",),
    ".standin": ("CommonsStandIn", "CommonsStandInSettings"),
    ".state": ("CommonsState", "StepLog", "StepStats"),
})

register_family(Family(
    name="commons",
    summary="GovSim's commons (Piatti et al. 2024): fishing, pasture and pollution",
    scenario_names=("commons",),  # CommonsGame.name
    commands=f"{__name__}.commands",
    subcommands={"commons-transcript": "a GovSim commons run month by month: harvests, discussion, limit, insights"},
    report_sections=(f"{__name__}.report",),
    checkpoint_classes=(f"{__name__}.metrics:MonthRecord", f"{__name__}.state:StepStats", f"{__name__}.state:StepLog",
                        f"{__name__}.state:CommonsState", f"{__name__}.memory:MemoryItem"),
))
