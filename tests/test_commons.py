"""GovSim's commons: the metrics on hand-made histories, the allocation, the readers, memory
retrieval, every phase on the stand-in (recorded and rebuilt exactly), the conditions
differing as the stand-in says they should, fallbacks, and kill -9 mid-discussion."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, JitteryStandIn, cli, dump, run_experiment

from agentsim.games.commons import CommonsGame, CommonsStandInSettings, allocate, parser
from agentsim.games.commons.memory import MemoryItem, retrieve
from agentsim.games.commons.metrics import (
    MonthRecord,
    efficiency,
    equality,
    gains,
    kaplan_meier,
    over_usage,
    run_metrics,
    survival_months,
)
from agentsim.games.commons.situations import CommonsSituation
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.store import Store


# --- metrics on hand-made histories -------------------------------------------------------------
def month(number: int, stock: int, threshold: int, caught: dict[int, int], *, collapsed: bool = False,
          fallbacks: frozenset[int] = frozenset()) -> MonthRecord:
    return MonthRecord(number, stock, threshold, dict(caught), dict(caught), fallbacks,
                       stock - sum(caught.values()), collapsed)


def test_survival_is_the_collapse_month_or_the_horizon() -> None:
    safe = [month(m, 100, 10, {0: 10, 1: 10}) for m in range(1, 13)]
    assert survival_months(safe, 12) == 12
    collapsing = [month(1, 100, 10, {0: 30, 1: 30}), month(2, 80, 8, {0: 40, 1: 38}, collapsed=True)]
    assert survival_months(collapsing, 12) == 2
    assert survival_months([month(1, 100, 10, {0: 99}, collapsed=True)], 12) == 1


def test_gain_and_equality_follow_the_papers_gini() -> None:
    history = [month(1, 100, 10, {0: 10, 1: 30}), month(2, 80, 8, {0: 10, 1: 10})]
    assert gains(history, [0, 1, 2]) == {0: 20, 1: 40, 2: 0}
    # R = (20, 40, 0): sum |Ri - Rj| over ordered pairs = 2 (20 + 20 + 40) = 160; 2 N sum R = 2 * 3 * 60 = 360
    assert equality([20, 40, 0]) == pytest.approx(1 - 160 / 360)
    assert equality([7, 7, 7]) == 1.0
    assert equality([0, 0]) == 1.0
    assert equality([10, 0]) == pytest.approx(0.5)


def test_efficiency_compares_the_total_with_the_horizon_times_the_initial_sustainable_catch() -> None:
    sustainable = [month(m, 100, 10, dict.fromkeys(range(5), 10)) for m in range(1, 13)]
    assert efficiency(sustainable, 12, 50) == 1.0
    greedy = [month(1, 100, 10, dict.fromkeys(range(5), 20)), month(2, 0, 0, {}, collapsed=True)]
    assert efficiency(greedy, 12, 50) == pytest.approx(100 / 600)
    assert efficiency([month(m, 100, 10, dict.fromkeys(range(5), 20)) for m in range(1, 13)], 12, 50) == 1.0  # capped


def test_over_usage_counts_harvests_above_the_threshold_among_positive_ones_and_skips_fallbacks() -> None:
    history = [
        month(1, 100, 10, {0: 11, 1: 10, 2: 0}),  # one above, one at, one zero (not counted)
        month(2, 60, 6, {0: 7, 1: 30, 2: 0}, fallbacks=frozenset({1})),  # the fallback is not a choice
    ]
    assert over_usage(history) == pytest.approx(2 / 3)
    assert over_usage(history, [1]) == 0.0
    assert over_usage([month(1, 100, 10, {0: 0})]) is None


def test_run_metrics_split_by_model() -> None:
    history = [month(1, 100, 10, {0: 10, 1: 10, 2: 25}), month(2, 90, 9, {0: 9, 1: 9, 2: 30}, collapsed=True)]
    result = run_metrics(history, horizon=12, villagers=[0, 1, 2], initial_sustainable=50,
                         names={0: "John", 1: "Kate", 2: "Jack"}, models={0: "a", 1: "a", 2: "b"})
    assert result["survival_months"] == 2 and result["collapse_month"] == 2 and not result["survived"]
    assert result["gains"] == {"John": 19, "Kate": 19, "Jack": 55}
    assert result["by_model"]["a"] == {"villagers": 2, "gain": 19.0, "equality": 1.0, "over_usage": 0.0}
    assert result["by_model"]["b"]["over_usage"] == 1.0


def test_kaplan_meier_censors_the_runs_that_survived() -> None:
    # collapses at 2 and 4; two runs survive to 12 (censored)
    assert kaplan_meier([2, 4, 12, 12], [True, True, False, False]) == [(0, 1.0), (2, 0.75), (4, 0.5)]
    assert kaplan_meier([12, 12], [False, False]) == [(0, 1.0)]


# --- the environment ----------------------------------------------------------------------------------
def test_allocation_gives_what_was_asked_or_each_unit_to_a_random_hungry_villager() -> None:
    assert allocate({0: 10, 1: 20}, 100, random.Random(1)) == {0: 10, 1: 20}
    caught = allocate({0: 50, 1: 50, 2: 5, 3: 0}, 60, random.Random(7))
    assert sum(caught.values()) == 60 and caught[3] == 0
    assert all(caught[index] <= wanted for index, wanted in {0: 50, 1: 50, 2: 5}.items())
    assert caught == allocate({0: 50, 1: 50, 2: 5, 3: 0}, 60, random.Random(7))  # seeded
    shares = [allocate({0: 100, 1: 100}, 100, random.Random(seed))[0] for seed in range(200)]
    assert 45 < sum(shares) / len(shares) < 55  # no order bias


def test_thresholds_are_the_papers() -> None:
    params = CommonsGame().params
    assert params.threshold(100, 5) == 10 and params.threshold(59, 5) == 5
    assert params.sustainable_catch(100) == 50


# --- reading replies ---------------------------------------------------------------------------------
def test_harvest_reader() -> None:
    assert parser.parse_harvest("Let me think. Answer: 12 tons.", 100).action == "12"
    assert parser.parse_harvest("**Answer**: 7", 100).action == "7"
    assert parser.parse_harvest("I would catch 10 tons", 100).problem is not None  # no Answer: never silently 0
    assert parser.parse_harvest("Answer: 120 tons", 100).problem is not None
    assert parser.salvage_harvest("Answer: 120 tons", 100) == "100"


def test_utterance_reader() -> None:
    people = ("John", "Kate", "Jack")
    action = parser.parse_utterance('Response: "Let us take 10 each."\nConversation conclusion by me: no\n'
                                    "Next speaker: Kate", "John", people).action
    assert action is not None and parser.read_utterance(action) == ("Let us take 10 each.", False, "Kate")
    ended = parser.parse_utterance("Response: Agreed.\nConversation conclusion by me: yes", "Kate", people).action
    assert ended is not None and parser.read_utterance(ended) == ("Agreed.", True, None)
    assert parser.parse_utterance("Response: hi\nConversation conclusion by me: no\nNext speaker: Bob", "John",
                                  people).problem is not None
    assert parser.parse_utterance("Just words", "John", people).problem is not None


def test_limit_reflection_and_importance_readers() -> None:
    assert parser.parse_limit("They agreed on 8 tons each. Answer: 8").action == "8"
    assert parser.parse_limit("No number was agreed. Answer: N/A").action == "none"
    assert parser.parse_limit("no idea").problem is not None
    insights = parser.parse_reflection("1. Keep to 10 tons (because of 1,2)\n2. The lake is full (because of 3)", 3)
    assert json.loads(insights.action or "") == ["Keep to 10 tons", "The lake is full"]
    assert parser.parse_importance("Rating: 7").action == "7"
    assert parser.parse_importance("Rating: 12").problem is not None


# --- memory ------------------------------------------------------------------------------------------
def test_retrieval_weighs_importance_relevance_and_keeps_always_memories_first() -> None:
    memories = [
        MemoryItem(0, "2024-01-01", "The community agreed on a maximum limit of 6 tons per person.", "limit", None, True),
        MemoryItem(1, "2024-01-01", "Kate likes the weather at the lake.", "insight", 2),
        MemoryItem(2, "2024-01-01", "Before everyone fishes, there are 60 tons of fish in the lake.", "observation", 7),
        MemoryItem(3, "2024-02-01", "The boat needs new paint.", "insight", 2),
    ]
    shown = retrieve(memories, ["how many tons of fish to catch in the lake"], 2)
    assert [item.order for item in shown] == [0, 2]  # oldest first; the always memory, then relevant and important


# --- runs on the stand-in ---------------------------------------------------------------------------
class CapturingStandIn(StandInModel):
    """The stand-in, keeping every request's messages in call order."""

    def __init__(self, rules: Any) -> None:
        super().__init__(rules)
        self.requests: list[Request] = []

    def answer(self, request: Request) -> Completion:
        self.requests.append(request)
        return super().answer(request)


def test_every_phase_runs_and_every_prompt_rebuilds_exactly_from_the_store(tmp_path: Path) -> None:
    backends: list[CapturingStandIn] = []

    def capture(scenario: Any) -> CapturingStandIn:
        backends.append(CapturingStandIn(scenario.standin_rules()))
        return backends[0]

    game = CommonsGame(months=3, standin=CommonsStandInSettings(invalid_rate=0.3))
    (summary,) = run_experiment(game, tmp_path / "out", seed=2, backend=capture)
    store = Store(tmp_path / "out")
    calls = list(store.rows("SELECT t, agent, attempt, context FROM calls WHERE run = 1 ORDER BY t, agent, attempt"))
    assert len(calls) == len(backends[0].requests) == summary["calls"]
    for (t, agent, attempt, _), request in zip(calls, backends[0].requests):
        assert store.messages(game, 1, t, agent, attempt) == request.messages
    kinds = {json.loads(context)["kind"] for _, _, attempt, context in calls if attempt == 0}
    assert kinds == {"harvest", "utterance", "limit", "reflection", "importance"}
    assert summary["limits"][0] is not None  # the limit was extracted from the discussion
    assert summary["invalid_replies"] > 0 and summary["reasks"] > 0
    rounds = [json.loads(stats) for (stats,) in store.rows("SELECT stats FROM rounds WHERE run = 1 ORDER BY round")]
    assert {stats["step"] for stats in rounds} == kinds and {stats["month"] for stats in rounds} == {1, 2, 3}
    store.close()


def test_an_unparseable_harvest_is_reasked_then_recorded_as_a_fallback(tmp_path: Path) -> None:
    (summary,) = run_experiment(CommonsGame(months=2, standin=CommonsStandInSettings(invalid_rate=1.0)), tmp_path / "out",
                                seed=1)
    assert summary["harvest_fallbacks"] == 10 and summary["fallbacks"] >= 10
    assert summary["over_usage"] is None  # fallbacks are never analysed as choices
    store = Store(tmp_path / "out")
    harvests = list(store.rows(
        "SELECT d.attempt, d.parsed, d.error, d.action FROM decisions d JOIN decisions f ON f.run = d.run AND f.t = d.t"
        " AND f.agent = d.agent AND f.attempt = 0 WHERE d.run = 1 AND f.context LIKE '{\"kind\":\"harvest\"%'"))
    assert {attempt for attempt, *_ in harvests} == {0, 1, 2}
    assert all(error is not None for _, _, error, _ in harvests)
    assert {action for attempt, _, _, action in harvests if attempt == 2} == {"0"}  # recorded, as a fallback
    store.close()


def run_conditions(tmp_path: Path) -> dict[str, dict[str, Any]]:
    results = {}
    for name, changes in {"default": {}, "universalization": {"universalization": True},
                          "newcomer": {"newcomer": True}, "no-communication": {"communication": False}}.items():
        (summary,) = run_experiment(CommonsGame(**changes), tmp_path / name, seed=3)
        results[name] = summary
    return results


def test_the_conditions_differ_as_the_standin_says(tmp_path: Path) -> None:
    results = run_conditions(tmp_path)
    default, universal = results["default"], results["universalization"]
    newcomer, silent = results["newcomer"], results["no-communication"]
    assert default["survival_months"] == 12 and default["limits"][0] is not None
    assert default["stop_reason"] == universal["stop_reason"] == "months" and silent["stop_reason"] == "collapse"
    assert silent["survival_months"] == 2 and silent["limits"] == [None, None] and silent["over_usage"] == 1.0
    assert universal["survival_months"] == 12
    assert universal["gain"] > default["gain"] and universal["efficiency"] > default["efficiency"]
    assert silent["over_usage"] > default["over_usage"]  # Table 3: without communication, more over-usage
    assert newcomer["equality"] < default["equality"] and newcomer["survival_months"] < 12
    store = Store(tmp_path / "newcomer")
    first = dict(store.rows("SELECT agent, payoff FROM moves WHERE run = 1 AND t = (SELECT MIN(t) FROM decisions "
                            "WHERE run = 1 AND agent = 4 AND context LIKE '{\"kind\":\"harvest\"%')"))
    store.close()
    assert first[4] > max(first[agent] for agent in range(4))  # the greedy newcomer takes most
    assert newcomer["condition"] == "newcomer" and default["condition"] == "default"


def test_a_mixed_population_is_measured_per_model(tmp_path: Path) -> None:
    result = cli(str(ROOT / "scenarios" / "commons_fishing.py"), "--population", "stand-in=3,stand-in:b=2",
                 "--runs", "1", "--set", "months=2", "--no-live", "--out", str(tmp_path / "out"))
    if result.returncode == 2 and "stand-in:b" in result.stderr:
        pytest.skip("this build has no second stand-in label")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads((tmp_path / "out" / "summary.json").read_text())["runs"]
    assert sum(model["villagers"] for model in run["by_model"].values()) == 5


# --- the scenario files, and kill -9 mid-discussion ---------------------------------------------------
@pytest.mark.parametrize("name", ["commons_fishing", "commons_pasture", "commons_pollution", "commons_conditions"])
def test_scenario_files_run_from_the_command_line(tmp_path: Path, name: str) -> None:
    result = cli(str(ROOT / "scenarios" / f"{name}.py"), "--runs", "1", "--set", "months=4", "--no-live",
                 "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "out" / "summary.json").read_text())
    for run in document["runs"]:
        assert {"survival_months", "gain", "efficiency", "equality", "over_usage"} <= set(run)
        assert run["status"] == "done"


KILLING_SCENARIO = '''
import os, signal
from pathlib import Path
from agentsim.games.commons import CommonsGame

MARKER = Path(os.environ["COMMONS_KILL_MARKER"])


class KillMidDiscussion:
    """SIGKILLs the process at the third utterance of month 3's discussion, once."""

    def answer(self, request):
        text = request.messages[-1].content
        conversation = text.split("Conversation so far:")[-1]
        if "Output format:" in text and "Date: 2024-03-01" in text and conversation.count("\\n-") >= 3 and not MARKER.exists():
            MARKER.write_text("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        return None


class Killing(CommonsGame):
    def standin_rules(self):
        return [KillMidDiscussion(), *super().standin_rules()]


scenario = Killing(resource="fishing", months=5)
'''


def test_kill_9_mid_discussion_then_resume_records_what_an_uninterrupted_run_does(tmp_path: Path) -> None:
    scenario_file = tmp_path / "killing.py"
    scenario_file.write_text(KILLING_SCENARIO)
    settings = ["--runs", "2", "--seed", "5", "--checkpoint-seconds", "0", "--no-live"]
    whole_marker, killed_marker = tmp_path / "whole.marker", tmp_path / "killed.marker"
    whole_marker.write_text("never kill")
    environment = dict(os.environ, COMMONS_KILL_MARKER=str(whole_marker))
    assert cli(str(scenario_file), "--out", str(tmp_path / "whole"), *settings, env=environment).returncode == 0

    environment["COMMONS_KILL_MARKER"] = str(killed_marker)
    killed = subprocess.run([sys.executable, "-m", "agentsim", str(scenario_file), "--out", str(tmp_path / "killed"),
                             *settings], check=False, capture_output=True, text=True, timeout=60, env=environment)
    assert killed.returncode == -9, killed.stderr
    partial = dump(tmp_path / "killed" / "agentsim.db")
    steps = [json.loads(stats) for *_, stats in partial["rounds"]]
    assert any(stats["month"] == 3 and stats["step"] == "utterance" for stats in steps)  # killed mid-discussion
    assert 0 < len(partial["encounters"]) < len(dump(tmp_path / "whole" / "agentsim.db")["encounters"])

    resumed = cli(str(scenario_file), "--out", str(tmp_path / "killed"), "--resume", *settings, env=environment)
    assert resumed.returncode == 0, resumed.stderr
    assert dump(tmp_path / "killed" / "agentsim.db") == dump(tmp_path / "whole" / "agentsim.db")


def test_report_and_transcript_read_a_commons_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli(str(ROOT / "scenarios" / "commons_conditions.py"), "--runs", "1", "--set", "months=5", "--no-live",
               "--out", str(out)).returncode == 0
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    index = json.loads((out / "report" / "report.json").read_text())
    assert "commons" in index["sections"]
    assert {"commons_resource", "commons_survival"} <= {figure["name"] for figure in index["figures"]}
    table = (out / "report" / "commons_metrics.csv").read_text().splitlines()
    assert len(table) == 5 and {"default", "universalization", "newcomer", "no-communication"} == {
        line.split(",")[2] for line in table[1:]}

    shown = cli("commons-transcript", str(out), "--run", "1")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "== Month 1" in text and "== Month 2" in text and "Mayor: Ladies and gentlemen" in text
    assert "Agreed limit:" in text and "Harvest: John wanted" in text and "Reflection, John:" in text
    prompts = cli("transcript", str(out), "--run", "4")  # every call's prompt: the no-communication cell's
    assert prompts.returncode == 0, prompts.stderr
    assert "[system]" in prompts.stdout and "Date: 2024-02-01" in prompts.stdout
    assert "opportunity to communicate" not in prompts.stdout and "Ladies and gentlemen" not in prompts.stdout
    talk = cli("transcript", str(out), "--run", "1")
    assert "opportunity to communicate" in talk.stdout and "Conversation conclusion by me:" in talk.stdout
    assert cli("commons-transcript", str(out), "--run", "9").returncode == 2


def test_a_context_alone_rebuilds_its_conditions_prompt() -> None:
    silent = CommonsSituation(kind="harvest", month=2, agent=0, name="John", others=("Kate",), stock=60, silent=True,
                              date="2024-02-01", memories=(("2024-02-01", "Before everyone fishes, there are 60 tons"),))
    greedy = CommonsSituation(kind="harvest", month=4, agent=1, name="Kate", others=("John",), stock=80, greedy=True)
    default_game = CommonsGame()  # the grid's base parameters, as a generic reader would rebuild with
    system = default_game.rebuild_messages(silent.encode())[0].content
    assert "opportunity to communicate" not in system and "along with one other fisherman" in system.replace("fishermen", "fisherman")
    assert "you just want to make money" in default_game.rebuild_messages(greedy.encode())[0].content
    assert CommonsSituation.decode(silent.encode()) == silent


def test_the_order_answers_arrive_in_changes_nothing(tmp_path: Path) -> None:
    game = CommonsGame(months=4, newcomer=True, newcomer_month=2, standin=CommonsStandInSettings(invalid_rate=0.2))
    run_experiment(game, tmp_path / "immediate", seed=4)
    for salt in (1, 2):
        run_experiment(game, tmp_path / f"jittery{salt}", seed=4,
                       backend=lambda scenario, salt=salt: JitteryStandIn(scenario.standin_rules(), salt))
        assert dump(tmp_path / f"jittery{salt}" / "agentsim.db") == dump(tmp_path / "immediate" / "agentsim.db")
