"""The repeated Prisoner's Dilemma family (agentsim/games/dilemma/), end to end on the stand-in:
its scenario file through the command line, its cooperation figures, its report section and
subcommand, its prompt codec against the store, and a checkpoint that resumes the same run."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from helpers import ROOT, run_experiment, run_model
from rich.console import Console

from agentsim import checkpoints
from agentsim.analysis.commands import SUBCOMMANDS
from agentsim.analysis.report import build_report
from agentsim.cli import main
from agentsim.errors import ParameterError
from agentsim.games import FAMILIES
from agentsim.games.dilemma import DilemmaParams, DilemmaStandInSettings, DilemmaView, Play, PrisonersDilemma
from agentsim.live import render
from agentsim.llm.standin import StandInModel
from agentsim.model import BackendShare, PopulationModel
from agentsim.runner import RunView
from agentsim.scenario_files import load_scenario
from agentsim.store import Store


def test_the_scenario_file_runs_reports_and_registers_its_subcommand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pd"
    assert main([str(ROOT / "scenarios" / "prisoners_dilemma.py"), "--no-live", "--out", str(out), "--set", "max_rounds=8"]) == 0
    summaries = json.loads((out / "summary.json").read_text())["runs"]
    assert len(summaries) == 2
    for summary in summaries:
        # The stand-in cooperates with partners of good reputation and trembles 10% of the time.
        assert 0.6 < summary["cooperation_rate"] < 0.99
        assert summary["cooperation_by_model"] == {"stand-in": summary["cooperation_rate"]}
        assert summary["fallback_moves"] == 0 and summary["rounds"] == 8
    store = Store(out)
    stats = [json.loads(text) for (text,) in store.rows("SELECT stats FROM rounds WHERE run = 1 ORDER BY round")]
    store.close()
    assert len(stats) == 8 and all(0 <= entry["cooperation_rate"] <= 1 and entry["choices"] == 16 for entry in stats)
    assert set(stats[0]["by_model"]) == {"stand-in"}

    index = build_report(out)
    assert "dilemma" in index["sections"]
    figure = next(item for item in index["figures"] if item["name"] == "dilemma_cooperation")
    assert figure["rows"] == 8
    capsys.readouterr()
    assert SUBCOMMANDS["cooperation"]([str(out)]) == 0
    printed = capsys.readouterr().out
    assert "[stand-in]: cooperation" in printed and printed.count("by round:") == 2
    assert FAMILIES["dilemma"].scenario_names == ("prisoners_dilemma",)


@pytest.mark.parametrize(("trusting", "expected"), [(True, 1.0), (False, 0.0)])
def test_reputation_carries_the_first_move_through_the_population(tmp_path: Path, trusting: bool, expected: float) -> None:
    """Without trembles, the stand-in's discriminators all cooperate when they trust newcomers
    and all defect when they do not: reputations keep the first round's move for ever."""
    scenario = PrisonersDilemma(agents=8, max_rounds=6, standin=DilemmaStandInSettings(noise=0.0, trusting=trusting))
    (summary,) = run_experiment(scenario, tmp_path / "out", seed=3)
    assert summary["cooperation_rate"] == expected
    assert summary["mean_payoff"] == (3 if trusting else 1)


def test_the_codec_reads_replies_and_rebuilds_recorded_prompts(tmp_path: Path) -> None:
    codec = PrisonersDilemma().codec
    view = DilemmaView(4, (Play("C", "D", 0), Play("D", "D", 1)), ("C", "C", "D"))
    assert [codec.parse(text, view).action for text in ("C", "d", "I choose to cooperate.", "Defect!")] == ["C", "D", "C", "D"]
    assert codec.parse("C or D? Hard to say.", view).problem == "names both actions"
    assert codec.parse("Let me think.", view).problem == "names no action"
    assert codec.decode(codec.encode(view)) == view
    assert "C in 2 of their last 3 moves" in codec.messages(view)[1].content

    scenario = PrisonersDilemma(agents=4, max_rounds=3, standin=DilemmaStandInSettings(invalid_rate=0.9))
    run_experiment(scenario, tmp_path / "out", seed=2)
    store = Store(tmp_path / "out")
    t, agent, reply = next(iter(store.rows("SELECT t, agent, reply FROM calls WHERE attempt = 0 AND action IS NULL LIMIT 1")))
    messages = store.messages(scenario, 1, t, agent, attempt=1)
    store.close()
    assert [message.role for message in messages] == ["system", "user", "assistant", "user"]
    assert "Every player's reputation is public" in messages[0].content and messages[1].content.startswith("Round ")
    assert messages[2].content == reply and messages[3].content == codec.reminder(view, codec.parse(reply, view))


def test_a_checkpoint_resumes_the_same_run() -> None:
    scenario = PrisonersDilemma(agents=6, max_rounds=6)

    def fresh() -> PopulationModel:
        return PopulationModel(scenario, seed=5, backends=[BackendShare(StandInModel(scenario.standin_part().rules))])

    async def go() -> tuple[bytes, bytes]:
        whole = fresh()
        await whole.arun()
        halted = fresh()
        for _ in range(3):
            await halted.astep()
        resumed = fresh()
        resumed.restore(halted.checkpoint())
        await resumed.arun()
        return whole.checkpoint(), resumed.checkpoint()

    whole, resumed = asyncio.run(go())
    assert checkpoints.loads(whole)["metrics"].rounds == checkpoints.loads(resumed)["metrics"].rounds
    assert checkpoints.loads(whole)["agents"] == checkpoints.loads(resumed)["agents"]


def test_a_payoff_that_is_no_dilemma_is_refused_in_one_line() -> None:
    with pytest.raises(ParameterError, match="temptation > reward > punishment > sucker"):
        load_scenario(ROOT / "scenarios" / "prisoners_dilemma.py")[0].with_overrides({"reward": "6"})
    with pytest.raises(ParameterError, match="2\\*reward > temptation"):
        DilemmaParams(temptation=9, reward=4)


def test_the_live_view_shows_cooperation_and_payoff() -> None:
    model = run_model(PrisonersDilemma(agents=6, max_rounds=4), seed=2)
    figures = model.readout.live_figures(model)
    rate = model.metrics.total.cooperation_rate
    assert figures.shares == {"C": rate, "D": 1 - rate}
    view = RunView(run=1, seed=2, status="done", rounds_done=4, max_rounds=4, interactions=12, stop_reason=None,
                   metrics=figures, usage={}, calls_per_second=0.0)
    console = Console(width=110, record=True, color_system=None, file=io.StringIO())
    console.print(render({"scenario": "prisoners_dilemma", "backend": "stand-in", "seed": 2, "runs": 1}, [view]))
    screen = console.export_text()
    assert f"cooperation {rate:.0%} of choices" in screen and "mean payoff" in screen and "choices" in screen
