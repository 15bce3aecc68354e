"""The naming game (Baronchelli et al.; Flint Ashery et al. 2025) played by LLM agents: the game,
its answer reader and stand-in, the bias and strategy probes, comprehension questions, and the
same game on a network."""

from typing import TYPE_CHECKING

from .. import Family, lazy_exports, register_family

if TYPE_CHECKING:
    from .answers import NO_OPTION, SEVERAL, AnswerReader, parse_answer
    from .comprehension import QUESTIONS, ComprehensionStandIn, Question, question_messages, questions_for, score
    from .game import DRAWN_POOL_SIZE, NamingGame, NamingParams, generate_names
    from .network import (
        NETWORKS,
        NetworkMetrics,
        NetworkNamingGame,
        NetworkNamingParams,
        connected_graph,
        family_topology,
    )
    from .probes import FirstChoiceProbe, StrategyProbe, StrategyProbeParams
    from .readout import NamingReadout
    from .situation import Memory, NamingSituation
    from .standin import NamingStandIn, NamingStandInSettings, read_options

__all__ = [
    "DRAWN_POOL_SIZE", "NETWORKS", "NO_OPTION", "QUESTIONS", "SEVERAL",
    "AnswerReader", "ComprehensionStandIn", "FirstChoiceProbe", "Memory", "NamingGame", "NamingParams",
    "NamingReadout", "NamingSituation", "NamingStandIn", "NamingStandInSettings", "NetworkMetrics", "NetworkNamingGame",
    "NetworkNamingParams", "Question",
    "StrategyProbe", "StrategyProbeParams",
    "connected_graph", "family_topology", "generate_names", "parse_answer", "question_messages", "questions_for",
    "read_options", "score",
]

lazy_exports(__name__, {
    ".answers": ("NO_OPTION", "SEVERAL", "AnswerReader", "parse_answer"),
    ".comprehension": ("QUESTIONS", "ComprehensionStandIn", "Question", "question_messages", "questions_for", "score"),
    ".game": ("DRAWN_POOL_SIZE", "NamingGame", "NamingParams", "generate_names"),
    ".network": ("NETWORKS", "NetworkMetrics", "NetworkNamingGame", "NetworkNamingParams", "connected_graph",
                 "family_topology"),
    ".probes": ("FirstChoiceProbe", "StrategyProbe", "StrategyProbeParams"),
    ".readout": ("NamingReadout",),
    ".situation": ("Memory", "NamingSituation"),
    ".standin": ("NamingStandIn", "NamingStandInSettings", "read_options"),
})


register_family(Family(
    name="naming",
    summary="the naming game (Flint Ashery et al. 2025): conventions, collective bias, committed minorities, networks",
    # NamingGame, NetworkNamingGame, FirstChoiceProbe, StrategyProbe: their `name`s
    scenario_names=("naming_game", "network_naming_game", "individual_bias", "strategies"),
    commands=f"{__name__}.commands",
    subcommands={
        "bias": "individual bias of first choices and collective bias of consensus",
        "strategies": "the strategy table (Table 1) of strategy-probe runs",
        "critical-mass": "search the critical mass against both conventions of a pair",
        "unbiased-pool": "draw random-string pools until one is unbiased",
        "comprehension": "ask Table S7's questions at a recorded run's states",
        "check-model": "is a model fit for the naming-game experiments? readable replies, preference, calibration, "
                       "comprehension",
        "import-ainorms": "the AI-norms repository's published runs (Flint Ashery et al. 2025) as results directories "
                          "(import ainorms ZIP_OR_DIR --out DIR)",
    },
    report_sections=(f"{__name__}.report", f"{__name__}.network_report"),
    # ConventionMetrics and its parts register under their old names (metrics.py)
    checkpoint_classes=(f"{__name__}.network:NetworkMetrics",),
))
