"""What agentsim's readers know of a provider comes from the providers' table (issue 43, item
3's follow-up): a stand-in provider registered under another name than `stand-in` (and the
stand-in under a label, `stand-in:LABEL`) is the stand-in for the live view, the report, the
naming game's backend labels and strategy tables and `comprehension`, as it is for the session
that ran it; none of them compares the spec's text with "stand-in"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

import agentsim
from agentsim.analysis.recorded import RecordedExperiment
from agentsim.analysis.report import build_report
from agentsim.games.naming import ComprehensionStandIn, NamingGame, NamingStandInSettings
from agentsim.games.naming.bias import backend_label
from agentsim.games.naming.comprehension_check import comprehension_backend
from agentsim.games.naming.strategies import strategy_table
from agentsim.live import render
from agentsim.llm import providers
from agentsim.llm.providers import Provider, all_on_the_stand_in
from agentsim.llm.standin import StandInModel

HOUSE = "house-rules"
FAVOURING = NamingStandInSettings(bias_name="M", bias=0.5, noise=0.1)


@pytest.fixture
def house_rules(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A second stand-in provider, as a script registers one (`providers.register`)."""
    monkeypatch.setitem(providers.TABLE, HOUSE, Provider(name=HOUSE, summary="a lab's own rules, in process",
                                                         target="LABEL", stand_in=True))
    yield HOUSE


def test_a_recorded_backend_label_is_on_the_stand_in_when_the_table_says_so(house_rules: str) -> None:
    assert all_on_the_stand_in("stand-in") and all_on_the_stand_in("stand-in:biased")
    assert all_on_the_stand_in(house_rules) and all_on_the_stand_in(f"stand-in:a=3,{house_rules}:b=3")
    assert not all_on_the_stand_in("stand-in=3,openai:gpt-4o-mini=3")
    assert not any(map(all_on_the_stand_in, ["openai:gpt-4o-mini", "rule agents", "", "stand-inx"]))


@pytest.fixture
def house_run(house_rules: str, tmp_path: Path) -> Path:
    out = tmp_path / "house"
    agentsim.run(NamingGame(agents=6, names=("Q", "M"), max_rounds=4, stop_at="none", standin=FAVOURING),
                 backend=house_rules, out=out, progress=False)
    return out


def test_the_readers_call_a_stand_in_provider_the_stand_in(house_rules: str, house_run: Path) -> None:
    console = Console(width=100, record=True)
    console.print(render({"scenario": "naming_game", "backend": house_rules}, []))
    assert "(built-in stand-in rules, not an LLM)" in console.export_text()
    recorded = RecordedExperiment(house_run)
    try:
        assert backend_label(recorded) == f"{house_rules} (favours M, bias 0.5, noise 0.1)"
        table = strategy_table([recorded], probes_only=False)
        assert table is not None and any(state.exact for state in table.states.values()), \
            "the stand-in's exact probabilities beside its counts"
        backend = comprehension_backend(house_rules, recorded.scenario)
        assert isinstance(backend, StandInModel) and isinstance(backend.rules[0], ComprehensionStandIn)
    finally:
        recorded.close()
    build_report(house_run)
    page = (house_run / "report" / "report.html").read_text(encoding="utf-8")
    assert "Every run here used the built-in stand-in policy" in page
