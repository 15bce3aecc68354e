"""The naming game (Baronchelli et al.; Flint Ashery et al. 2025) played by LLM agents: the game,
its answer reader and stand-in, the bias and strategy probes, comprehension questions, and the
same game on a network."""

from .. import Family, register_family
from .answers import NO_OPTION, SEVERAL, AnswerReader, parse_answer
from .comprehension import QUESTIONS, ComprehensionStandIn, Question, question_messages, questions_for, score
from .game import DRAWN_POOL_SIZE, NamingGame, NamingParams, generate_names
from .network import NETWORKS, NetworkMetrics, NetworkNamingGame, NetworkNamingParams, connected_graph, family_topology
from .probes import FirstChoiceProbe, StrategyProbe, StrategyProbeParams
from .situation import Memory, NamingSituation
from .standin import NamingStandIn, NamingStandInSettings, read_options

__all__ = [
    "DRAWN_POOL_SIZE", "NETWORKS", "NO_OPTION", "QUESTIONS", "SEVERAL",
    "AnswerReader", "ComprehensionStandIn", "FirstChoiceProbe", "Memory", "NamingGame", "NamingParams",
    "NamingSituation", "NamingStandIn", "NamingStandInSettings", "NetworkMetrics", "NetworkNamingGame", "NetworkNamingParams", "Question",
    "StrategyProbe", "StrategyProbeParams",
    "connected_graph", "family_topology", "generate_names", "parse_answer", "question_messages", "questions_for",
    "read_options", "score",
]


register_family(Family(
    name="naming",
    summary="the naming game (Flint Ashery et al. 2025): conventions, collective bias, committed minorities, networks",
    scenario_names=(NamingGame.name, NetworkNamingGame.name, FirstChoiceProbe.name, StrategyProbe.name),
    commands=f"{__name__}.commands",
    report_sections=(f"{__name__}.report", f"{__name__}.network_report"),
    checkpoint_classes=(NetworkMetrics,),  # ConventionMetrics and its parts register under their old names (metrics.py)
))
