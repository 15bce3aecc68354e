"""Cultural evolution of cooperation: the Donor game and the Stag Hunt over generations, with
evolving strategies and cultural norms (Liu 2025; Vallinder and Hughes 2024).

    game.py        the scenario on the common scheduler: phases, selection, newcomers
    donor.py       the Donor game and its reputation chain
    stag_hunt.py   the iterated Stag Hunt
    population.py  agents (slots), the schedule of phases, selection
    prompts.py     Appendix B's prompts and Vallinder and Hughes's; situations and their context
    parsers.py     reading strategies, norms, donations, hunts
    standin.py     the stand-in that answers them with no key
    metrics.py     per-generation payoffs, donation fraction, cooperation rate, rosters
    report.py      the report's figures (Figs. 1-3) and the lineage of strategies and norms
"""

from typing import TYPE_CHECKING

from .. import Family, lazy_exports, register_family

if TYPE_CHECKING:
    from .donor import DonorGame
    from .metrics import EvolutionMetrics as EvolutionMetrics
    from .params import CONDITION_LABELS, CONDITIONS, DonorParams, EvolutionParams, StagHuntParams
    from .population import RunState as RunState
    from .stag_hunt import StagHunt
    from .standin import EvolutionStandIn, EvolutionStandInSettings

__all__ = ["CONDITIONS", "CONDITION_LABELS", "DonorGame", "DonorParams", "EvolutionParams", "EvolutionStandIn",
           "EvolutionStandInSettings", "StagHunt", "StagHuntParams", "conditions"]

lazy_exports(__name__, {
    ".donor": ("DonorGame",),
    ".metrics": ("EvolutionMetrics",),
    ".params": ("CONDITION_LABELS", "CONDITIONS", "DonorParams", "EvolutionParams", "StagHuntParams"),
    ".population": ("RunState",),
    ".stag_hunt": ("StagHunt",),
    ".standin": ("EvolutionStandIn", "EvolutionStandInSettings"),
})


def conditions(*names: str) -> list[dict[str, str]]:
    """The paper's conditions as a scenario file's VARIANTS (all four by default)."""
    from .params import CONDITIONS  # lazy: the registry imports this light __init__; the family's modules when used

    return [{"condition": name} for name in (names or CONDITIONS)]


register_family(Family(
    name="evolution",
    summary="cultural evolution of cooperation: the Donor game and the Stag Hunt over generations",
    scenario_names=("donor_game", "stag_hunt"),  # DonorGame.name, StagHunt.name
    commands=f"{__name__}.commands",
    subcommands={"lineage": "which survivor's strategy and norms each new agent of a Donor game or Stag Hunt got"},
    report_sections=(f"{__name__}.report",),
    checkpoint_classes=(f"{__name__}.population:RunState", f"{__name__}.metrics:EvolutionMetrics"),
))
