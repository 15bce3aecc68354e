"""`python -m agentsim check-model` (agentsim/games/naming/model_check.py): its verdict from each
measurement, and the command end to end on the stand-in (which reports no distributions).
On SmolLM2 the same command is in docs/running-on-a-laptop.md; its calibration measurement
is tested there (tests/test_smollm2.py)."""

from __future__ import annotations

from typing import Any

from helpers import cli
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.games.naming.model_check import CheckReport, ModelCheck, report_lines, verdict

CHECK = ModelCheck(backend="b")


def _report(**changes: object) -> CheckReport:
    report = CheckReport("b", ("Q", "M"), readable={"without the grammar": (24, 24), "with the grammar": (24, 24)},
                         position=(25, 48), letter=(24, 48), position_exact=0.5, calibration=[{"within": True}],
                         comprehension={"rules": (15, 16), "time": (9, 10), "state": (5, 6)})
    for key, value in changes.items():
        setattr(report, key, value)
    return report


def test_a_model_that_reads_understands_and_has_no_preference_is_fit() -> None:
    assert verdict(_report(), CHECK) == (True, [])


def test_a_model_readable_only_under_the_grammar_is_fit_with_it() -> None:
    fit, reasons = verdict(_report(readable={"without the grammar": (1, 24), "with the grammar": (24, 24)}), CHECK)
    assert fit and reasons == ["it needs the answer grammar (--set constrained_decoding=true): only 4% of its "
                               "replies are readable without it"]


def test_each_failing_measurement_is_a_reason_against() -> None:
    cases = {
        "its replies cannot be read": _report(readable={"without the grammar": (1, 24), "with the grammar": (3, 24)}),
        "it chooses by position: the first-listed name with probability 71%": _report(position_exact=0.71),
        "it chooses by position: the first-listed name 79% of the time": _report(position=(38, 48), position_exact=None),
        "its stored option distributions do not match its answers": _report(calibration=[{"within": False}]),
        "it answers 34% of the paper's comprehension questions right": _report(
            comprehension={"rules": (3, 16), "time": (4, 10), "state": (4, 6)}),
    }
    for reason, report in cases.items():
        fit, reasons = verdict(report, CHECK)
        assert not fit and any(line.startswith(reason) for line in reasons), (reason, reasons)



def test_a_sampled_preference_is_judged_with_its_interval() -> None:
    """Issue 37 (16): over HTTP only sampled figures exist. 56% [42%, 69%] of 48 used to pass
    without a word on position; it is not settled either way, and the verdict says how many
    samples would settle it. A share whose interval lies within the margin clears the model."""
    fit, reasons = verdict(_report(position=(27, 48), position_exact=None), CHECK)
    assert not fit and len(reasons) == 1, reasons
    assert reasons[0].startswith("its position preference is not settled: the first-listed name 56% of 48 sampled "
                                 "choices (95% interval 42%-69%)"), reasons
    assert "about 673 readable choices would settle it (check-model --preference-seeds 337)" in reasons[0], reasons
    settled = verdict(_report(position=(500, 1000), position_exact=None), CHECK)
    assert settled == (True, []), "50% of 1000: within 40%-60%, no preference"
    preferring = verdict(_report(position=(140, 200), position_exact=None), CHECK)
    assert not preferring[0] and preferring[1][0].startswith("it chooses by position: the first-listed name 70%")
    lines = report_lines(_report(position=(27, 48), position_exact=None, fit=False, reasons=reasons,
                                 calibration=None), CHECK)
    assert lines[-1].startswith("verdict: NOT SETTLED for the naming-game experiments: its position preference")


def test_a_sampled_share_off_the_exact_one_is_explained() -> None:
    """In process both figures exist: a sampled interval that misses the exact probability
    (11 of 24 against 67%) is said to, with its p-value, not left beside it without a word."""
    report = _report(position=(11, 24), position_exact=0.672, calibration=None)
    (line,) = [line for line in report_lines(report, CHECK) if line.startswith("preference: first-listed")]
    assert "exact probability 67%" in line and "the sampled interval misses the exact 67%" in line
    assert "p=0.03" in line, line
    (close,) = [line for line in report_lines(_report(position=(16, 24), position_exact=0.672, calibration=None), CHECK)
                if line.startswith("preference: first-listed")]
    assert "misses" not in close


def test_check_model_over_http_reports_every_measurement_and_a_verdict(standin_server: Any) -> None:
    """The whole command against a server (the stand-in's rule behind the OpenAI API): a
    server reports no distributions, so calibration is not available."""
    server = standin_server(capacity=8)
    shown = cli("check-model", "--backend", f"openai:m@{server.url}/v1", "--seeds", "10", timeout=120)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"check-model openai:m@{server.url}/v1 (naming game, names Q M)"
    assert lines[1].startswith("readable replies: ") and "without the grammar" in lines[1] and "with the grammar" in lines[1]
    assert any(line.startswith("preference: first-listed name chosen ") for line in lines)
    assert any(line.startswith("calibration: not available: this backend reports no exact option distributions")
               for line in lines)
    assert any(line.startswith("comprehension (Table S7): ") for line in lines)
    assert lines[-1].startswith("verdict: ")


def test_check_model_refuses_what_it_cannot_check() -> None:
    for arguments in (("--backend", "stand-in"), ("--backend", "local:smollm2", "--names", "Q")):
        refused = cli("check-model", *arguments)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
