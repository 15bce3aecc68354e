"""Registers SIGN's section with `python -m agentsim report` (agentsim/analysis/report.py
imports this module); `python -m agentsim.analysis.sign DIR` writes the same figures alone."""

from __future__ import annotations

from .report import register_section
from .sign import sign_applies, sign_section

register_section("sign", "SIGN: schema-induced naming", order=70, applies=sign_applies)(sign_section)
