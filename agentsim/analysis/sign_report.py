"""Registers SIGN's section with `python -m agentsim report` (agentsim/analysis/report.py).

The report's registry lives in the analysis issue's `report.py`; importing this module adds
the section there (list it in the report's `_load_sections`, or name it in the environment
variable AGENTSIM_REPORT_SECTIONS=agentsim.analysis.sign_report). Where `report.py` is absent,
importing it does nothing, and `python -m agentsim.analysis.sign DIR` writes the same figures.
"""

from __future__ import annotations

from .sign import sign_applies, sign_section

try:
    from .report import register_section  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # the report command is not in this checkout
    REGISTERED = False
else:
    register_section("sign", "SIGN: schema-induced naming", order=70, applies=sign_applies)(sign_section)
    REGISTERED = True
