"""The repeated Prisoner's Dilemma (agentsim/games/dilemma/, a game on the game layer), end to
end on the stand-in: its scenario file through the command line, its cooperation (its score,
the round lines, the layer's report section and the `cooperation` subcommand), reputations that
carry the first move, the exact prompts from the store, a checkpoint that resumes the same run,
and payoffs that are no dilemma refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from helpers import ROOT, run_experiment

from agentsim import checkpoints
from agentsim.analysis.commands import SUBCOMMANDS
from agentsim.analysis.report import build_report
from agentsim.cli import main
from agentsim.errors import ParameterError
from agentsim.gamekit.engine import engine_of
from agentsim.games import FAMILIES
from agentsim.games.dilemma import DilemmaParams, DilemmaStandInSettings, PrisonersDilemma
from agentsim.llm.standin import StandInModel
from agentsim.model import BackendShare, PopulationModel
from agentsim.scenario_files import load_scenario
from agentsim.store import Store


def test_the_scenario_file_runs_reports_and_registers_its_subcommand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pd"
    assert main([str(ROOT / "scenarios" / "prisoners_dilemma.py"), "--no-live", "--out", str(out), "--set", "max_rounds=8"]) == 0
    summaries = json.loads((out / "summary.json").read_text())["runs"]
    assert len(summaries) == 2
    store = Store(out)
    for summary in summaries:
        # The stand-in cooperates with partners of good reputation and trembles 10% of the time.
        assert 0.6 < summary["score"] < 0.99  # the score is the run's cooperation rate
        assert summary["fallback_moves"] == 0 and summary["rounds"] == 8
        actions = [action for (action,) in store.rows("SELECT action FROM moves WHERE run = ? AND fallback = 0",
                                                      (summary["run"],))]
        assert summary["score"] == pytest.approx(actions.count("C") / len(actions))
    stats = [json.loads(text) for (text,) in store.rows("SELECT stats FROM rounds WHERE run = 1 ORDER BY round")]
    store.close()
    assert len(stats) == 8 and all(entry["choices"] == 16 and len(entry["groups"]) == 8 for entry in stats)
    for entry in stats:
        shares = entry["moves"]["choose"]["shares"]
        assert sum(group["data"]["cooperated"] for group in entry["groups"]) == round(shares.get("C", 0) * 16)

    index = build_report(out)
    assert "gamekit" in index["sections"]
    figure = next(item for item in index["figures"] if item["name"] == "gamekit_prisoners_dilemma_rounds")
    assert figure["rows"] > 0
    capsys.readouterr()
    assert SUBCOMMANDS["cooperation"]([str(out)]) == 0
    printed = capsys.readouterr().out
    assert "[all]: cooperation" in printed and printed.count("by round:") == 2
    assert FAMILIES["dilemma"].scenario_names == ("prisoners_dilemma",)


@pytest.mark.parametrize(("trusting", "expected"), [(True, 1.0), (False, 0.0)])
def test_reputation_carries_the_first_move_through_the_population(tmp_path: Path, trusting: bool, expected: float) -> None:
    """Without trembles, the stand-in's discriminators all cooperate when they trust newcomers
    and all defect when they do not: reputations keep the first round's move for ever."""
    game = PrisonersDilemma(agents=8, max_rounds=6, standin=DilemmaStandInSettings(noise=0.0, trusting=trusting,
                                                                                    invalid_rate=0.0))
    (summary,) = run_experiment(engine_of(game), tmp_path / "out", seed=3)
    assert summary["score"] == expected
    assert summary["mean_payoff"] == (3 if trusting else 1)


def test_the_prompt_shows_the_partners_reputation_and_is_rebuilt_from_the_store(tmp_path: Path) -> None:
    scenario = engine_of(PrisonersDilemma(agents=4, max_rounds=3, standin=DilemmaStandInSettings(invalid_rate=0.9)))
    run_experiment(scenario, tmp_path / "out", seed=2)
    store = Store(tmp_path / "out")
    t, agent, reply = next(iter(store.rows("SELECT t, agent, reply FROM calls WHERE attempt = 0 AND action IS NULL LIMIT 1")))
    messages = store.messages(scenario, 1, t, agent, attempt=1)
    later = [store.messages(scenario, 1, t, agent) for t, agent in store.rows(
        "SELECT t, agent FROM calls WHERE attempt = 0 AND t >= 4")]
    store.close()
    assert [message.role for message in messages] == ["system", "user", "assistant", "user"]
    assert "Every player's reputation is public" in messages[0].content and messages[1].content.startswith("Round ")
    assert messages[2].content == reply and messages[3].content.startswith("Your reply could not be used")
    assert any("Your partner's reputation: C in" in each[-1].content for each in later)


def test_a_checkpoint_resumes_the_same_run() -> None:
    scenario = engine_of(PrisonersDilemma(agents=6, max_rounds=6))

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
    assert checkpoints.loads(whole)["state"] == checkpoints.loads(resumed)["state"]


def test_a_payoff_that_is_no_dilemma_is_refused_in_one_line() -> None:
    with pytest.raises(ParameterError, match="temptation > reward > punishment > sucker"):
        load_scenario(ROOT / "scenarios" / "prisoners_dilemma.py")[0].with_overrides({"reward": "6"})
    with pytest.raises(ParameterError, match="2\\*reward > temptation"):
        DilemmaParams(temptation=9, reward=4)
