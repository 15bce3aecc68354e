"""SIGN (Ren et al.): the naming game under three prompt conditions (free text, free text with
partner history, a strict `@say {name: Ck}` schema), its schema parser, metrics and stand-in."""

from typing import TYPE_CHECKING

from .. import Family, lazy_exports, register_family

if TYPE_CHECKING:
    from .game import CONDITION_LABELS, CONDITIONS, SignAgent, SignGame, SignParams, SignReadout, SignSituation, sign_grid
    from .metrics import THRESHOLDS, SignMetrics
    from .schema import (
        NOT_COMPLIANT,
        NOT_IN_LEXICON,
        ROUTES,
        FreeTextDecoder,
        SchemaParser,
        decision_route,
        lexicon,
        schema_regex,
    )
    from .standin import SignStandIn, SignStandInSettings

__all__ = [
    "CONDITIONS", "CONDITION_LABELS", "NOT_COMPLIANT", "NOT_IN_LEXICON", "ROUTES", "THRESHOLDS",
    "FreeTextDecoder", "SchemaParser", "SignAgent", "SignGame", "SignMetrics", "SignParams", "SignReadout", "SignSituation",
    "SignStandIn", "SignStandInSettings",
    "decision_route", "lexicon", "schema_regex", "sign_grid",
]

lazy_exports(__name__, {
    ".game": ("CONDITION_LABELS", "CONDITIONS", "SignAgent", "SignGame", "SignParams", "SignReadout", "SignSituation",
              "sign_grid"),
    ".metrics": ("THRESHOLDS", "SignMetrics"),
    ".schema": ("NOT_COMPLIANT", "NOT_IN_LEXICON", "ROUTES", "FreeTextDecoder", "SchemaParser", "decision_route",
                "lexicon", "schema_regex"),
    ".standin": ("SignStandIn", "SignStandInSettings"),
})


register_family(Family(
    name="sign",
    summary="SIGN (Zhang and Woisetschlaeger 2026): naming under free text, partner history or a strict schema",
    scenario_names=("sign",),  # SignGame.name
    report_sections=(f"{__name__}.report",),
    checkpoint_classes=(f"{__name__}.metrics:SignMetrics",),
))
