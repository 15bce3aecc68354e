"""GovSim's commons: the metrics on hand-made histories, the allocation, the readers, memory
retrieval, every phase on the stand-in (recorded and rebuilt exactly), the conditions
differing as the stand-in says they should, fallbacks, and kill -9 mid-discussion."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, JitteryStandIn, cli, dump, run_experiment, run_model

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
from agentsim.games.commons.state import month_day
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.parts import StandInPart
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
    # a run truncated at month 3 is at risk until then, never a collapse: 1 of 3 at risk collapses at 4
    assert kaplan_meier([3, 4, 12, 12], [False, True, False, False]) == [(0, 1.0), (4, pytest.approx(2 / 3))]


def test_a_run_stopped_before_its_end_is_truncated_not_a_collapse() -> None:
    history = [month(1, 100, 10, {0: 10, 1: 10}), month(2, 100, 10, {0: 10, 1: 10}), MonthRecord(3, 100, 10)]
    cut = run_metrics(history, horizon=12, villagers=[0, 1], initial_sustainable=50, names={0: "J", 1: "K"}, ended=False)
    assert cut["outcome"] == "truncated" and cut["survived"] is None and cut["collapse_month"] is None
    assert cut["survival_months"] == 2  # the months it harvested: where Kaplan-Meier censors it
    collapsed = [month(1, 100, 10, {0: 60, 1: 38}, collapsed=True)]
    assert run_metrics(collapsed, horizon=12, villagers=[0, 1], initial_sustainable=50, names={0: "J", 1: "K"},
                       ended=False)["outcome"] == "collapsed"  # stopped in the collapse month's discussion


# --- the environment ----------------------------------------------------------------------------------
def test_allocation_gives_what_was_asked_or_each_unit_to_a_random_hungry_villager() -> None:
    assert allocate({0: 10, 1: 20}, 100, random.Random(1)) == {0: 10, 1: 20}
    caught = allocate({0: 50, 1: 50, 2: 5, 3: 0}, 60, random.Random(7))
    assert sum(caught.values()) == 60 and caught[3] == 0
    assert all(caught[index] <= wanted for index, wanted in {0: 50, 1: 50, 2: 5}.items())
    assert caught == allocate({0: 50, 1: 50, 2: 5, 3: 0}, 60, random.Random(7))  # seeded
    shares = [allocate({0: 100, 1: 100}, 100, random.Random(seed))[0] for seed in range(200)]
    assert 45 < sum(shares) / len(shares) < 55  # no order bias


def test_thresholds_are_the_papers_and_the_newcomer_condition_is_govsims() -> None:
    params = CommonsGame().params
    assert params.threshold(100) == 10 and params.threshold(59) == 5
    assert params.sustainable_catch(100) == 50 and params.horizon == 12
    newcomer = CommonsGame(newcomer=True).params
    assert newcomer.horizon == 15 and newcomer.newcomer_month == 4  # GovSim: 15 rounds, the outsider at round 3 of 0..
    assert newcomer.threshold(100) == 12  # GovSim divides by its configured num_agents, 4, also once Luke joined
    assert CommonsGame(newcomer=True, months=6).params.horizon == 6


# --- reading replies ---------------------------------------------------------------------------------
def test_harvest_reader() -> None:
    assert parser.parse_harvest("Let me think. Answer: 12 tons.").action == "12"
    assert parser.parse_harvest("**Answer**: 7").action == "7"
    assert parser.parse_harvest("I would catch 10 tons").problem is not None  # no Answer: never silently 0
    assert parser.parse_harvest("Answer: 120 tons").action == "120"  # above the stock: what was asked, no re-ask
    assert parser.parse_harvest("Answer: 1,000 tons").action == "1000"
    assert parser.parse_harvest("Answer: -5 tons").problem is not None
    assert parser.parse_harvest("Answer: 8 tons. On second thought, Answer: 12").action == "8"  # GovSim stops at the first


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
    assert parser.parse_importance("Rating (1 to 10): 8").action == "8" and parser.parse_importance(" 6").action == "6"
    assert parser.parse_importance("Rating: 12").problem is not None


# --- memory ------------------------------------------------------------------------------------------
def test_retrieval_weighs_importance_relevance_keeps_always_memories_first_and_drops_expired_ones() -> None:
    memories = [
        MemoryItem(0, "2024-01-30", "The community agreed on a maximum limit of 6 tons of fish per person.", "limit",
                   "2024-04-02", None, True),
        MemoryItem(1, "2024-01-31", "Kate likes the weather at the lake.", "insight", "2024-04-03", 2),
        MemoryItem(2, "2024-01-31", "The stock in the lake was 60 tons of fish.", "insight", "2024-04-03", 7),
        MemoryItem(3, "2024-02-29", "The boat needs new paint.", "insight", "2024-05-02", 2),
        MemoryItem(4, "2024-01-01", "Before everyone fishes, there are 100 tons of fish in the lake.", "stock",
                   "2024-01-31", None, True),
    ]
    shown = retrieve(memories, ["lake"], 2, "2024-03-01")
    assert [item.order for item in shown] == [0, 2]  # oldest first; the always memory, then relevant and important
    assert [item.order for item in retrieve(memories, ["lake"], 9, "2024-04-02")] == [1, 2, 3]  # the limit expired
    assert [item.order for item in retrieve(memories, ["lake"], 9, "2024-01-01")][-1] == 4  # the stock, that day only
    assert 4 not in [item.order for item in retrieve(memories, ["lake"], 9, "2024-01-31")]


def test_govsims_calendar() -> None:
    assert [month_day(1, step).isoformat() for step in ("harvest", "discussion", "reflection")] == [
        "2024-01-01", "2024-01-30", "2024-01-31"]
    assert month_day(2, "reflection").isoformat() == "2024-02-29" and month_day(13, "harvest").isoformat() == "2025-01-01"


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
        backends.append(CapturingStandIn(scenario.standin_part().rules))
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


# --- memory as GovSim keeps it, read back from the store -------------------------------------------
def harvest_prompts(store: Store, game: CommonsGame) -> list[tuple[int, int, str]]:
    """(month, agent, the prompt's text) of every harvest call, rebuilt from the store."""
    rows = store.rows("SELECT t, agent, context FROM calls WHERE run = 1 AND attempt = 0 AND context LIKE "
                      "'{\"kind\":\"harvest\"%' ORDER BY t, agent")
    prompts = []
    for t, agent, context in rows:
        (message,) = store.messages(game, 1, t, agent, 0)  # one user message, the rules first
        assert message.role == "user" and message.content.startswith("You are ")
        prompts.append((json.loads(context)["month"], agent, message.content))
    return prompts


def memory_lines(prompt: str) -> list[tuple[str, str]]:
    block = prompt.split("(format: YYYY-MM-DD: memory):\n", 1)[1].split("\n\n", 1)[0]
    return [(line[2:12], line[14:]) for line in block.splitlines()]


@pytest.mark.parametrize("keep_superseded_limits", [False, True])
def test_harvest_prompts_show_the_current_stock_threshold_and_limits_in_force_and_ten_memories(
        tmp_path: Path, keep_superseded_limits: bool) -> None:
    """A 12-month universalization run on the stand-in, its harvest prompts rebuilt from the
    store: each month's stock and threshold sentence, that month's only; the agreed limit in
    force: by default the current agreement only (a new one ends the one before it), or, as
    GovSim's code keeps them (`keep_superseded_limits`), every agreement of the last 63 days
    (the current one and the one before it, in April also January's), each once; the top 10
    memories, or every memory in force when there are fewer."""
    game = CommonsGame(universalization=True, keep_superseded_limits=keep_superseded_limits)
    (summary,) = run_experiment(game, tmp_path / "out", seed=3)
    assert summary["outcome"] == "survived" and summary["months"] == 12
    held = {agent.index: list(agent.memory) for agent in run_model(game, seed=summary["seed"]).agents}  # the same run
    store = Store(tmp_path / "out")
    prompts = harvest_prompts(store, game)
    store.close()
    assert sorted({month for month, _, _ in prompts}) == list(range(1, 13)) and len(prompts) == 60
    agreed = {month: limit for month, limit in enumerate(summary["limits"], start=1) if limit is not None}
    assert len(agreed) == 12
    capped = 0
    for month_, agent, prompt in prompts:
        today, stock = month_day(month_, "harvest"), summary["stock"][month_ - 1]
        shown = memory_lines(prompt)
        texts = [text for _, text in shown]
        stocks = [text for text in texts if text.startswith("Before everyone fishes")]
        assert stocks == [f"Before everyone fishes, there are {stock} tons of fish in the lake."]
        universal = [text for text in texts if text.startswith("Given the current situation")]
        assert universal == [f"Given the current situation, if everyone fishes more than {stock // 10} tons, the lake "
                             "population will shrink next month."]
        limits = sorted((date, text) for date, text in shown if text.startswith("The community agreed"))
        in_force = sorted((month_day(made, "discussion").isoformat(),
                           f"The community agreed on a maximum limit of {limit} tons of fish per person.")
                          for made, limit in agreed.items()
                          if month_day(made, "discussion") < today < month_day(made, "discussion") + timedelta(days=63))
        if not keep_superseded_limits:
            in_force = in_force[-1:]
        assert limits == in_force and len(set(limits)) == len(limits)
        if month_ > 1:  # the current agreement is always there
            assert limits[-1][0] == month_day(month_ - 1, "discussion").isoformat()
            expected = (3 if month_ == 4 else min(2, month_ - 1)) if keep_superseded_limits else 1
            assert len(limits) == expected
        available = sum(1 for item in held[agent] if item.date <= today.isoformat() < item.expires)
        assert len(shown) == min(10, available)
        capped += available > 10
    assert capped > 0 or not keep_superseded_limits  # the cap of 10 was reached (April: 11 memories in force)


class GrabbingKate:
    """Kate asks for 100 tons in month 2, whatever is in the lake; the stand-in answers the rest."""

    def answer(self, request: Request) -> str | None:
        situation = request.situation
        if isinstance(situation, CommonsSituation) and situation.kind == "harvest" and situation.name == "Kate" \
                and situation.month == 2:
            return "I will take everything I can. Answer: 100 tons."
        return None


class Grabbing(CommonsGame):
    def standin_part(self) -> StandInPart:
        return StandInPart(rules=[GrabbingKate(), *super().standin_part().rules])


def test_a_request_above_the_stock_is_recorded_handed_out_by_the_papers_rule_and_counted(tmp_path: Path) -> None:
    game = Grabbing(months=3)
    (summary,) = run_experiment(game, tmp_path / "out", seed=3)
    store = Store(tmp_path / "out")
    harvest_t = [t for (t,) in store.rows("SELECT DISTINCT t FROM calls WHERE run = 1 AND context LIKE "
                                          "'{\"kind\":\"harvest\"%' ORDER BY t")]
    calls = list(store.rows("SELECT agent, attempt, reply FROM calls WHERE run = 1 AND t = ?", (harvest_t[1],)))
    moves = {agent: (action, payoff) for agent, action, payoff in store.rows(
        "SELECT agent, action, payoff FROM moves WHERE run = 1 AND t = ?", (harvest_t[1],))}
    fallbacks = list(store.rows("SELECT COUNT(*) FROM moves WHERE run = 1 AND fallback"))
    store.close()
    assert [(attempt, "100 tons" in reply) for agent, attempt, reply in calls if agent == 1] == [(0, True)]  # no re-ask
    assert moves[1][0] == "100" and fallbacks == [(0,)]  # recorded as asked, not a fallback
    stock = summary["stock"][1]
    wanted = {agent: int(action) for agent, (action, _) in moves.items()}
    caught = {agent: int(payoff) for agent, (_, payoff) in moves.items()}
    assert sum(wanted.values()) > stock == sum(caught.values())  # every unit handed out, none beyond the stock
    assert all(0 <= caught[agent] <= wanted[agent] for agent in caught) and caught[1] > stock // 10
    assert summary["catches"][1]["Kate"] == caught[1]
    # over-usage (Eq. 5) recomputed from the record: Kate's grab counts
    harvests = [(amount, stock_ // 10) for stock_, month_catches in zip(summary["stock"], summary["catches"])
                for amount in month_catches.values() if amount > 0]
    assert summary["over_usage"] == pytest.approx(sum(amount > limit for amount, limit in harvests) / len(harvests),
                                                  abs=1e-4)
    assert summary["over_usage"] > 0


def test_the_newcomer_run_lasts_fifteen_months_and_the_locals_carry_their_persona_line(tmp_path: Path) -> None:
    game = CommonsGame(newcomer=True, standin=CommonsStandInSettings(greedy_share=0.1))
    (summary,) = run_experiment(game, tmp_path / "out", seed=3)
    assert summary["outcome"] == "survived" and summary["months"] == 15 and summary["survival_months"] == 15
    store = Store(tmp_path / "out")
    prompts = harvest_prompts(store, game)
    store.close()
    local = "after reproduction.You are a local who learned to fish from your family."  # appended as GovSim does
    outsider = "after reproduction.You are a newcomer with a goal to expand your fishing business."
    assert {month for month, agent, _ in prompts if agent == 4} == set(range(4, 16))  # Luke joins in month 4
    for month_, agent, prompt in prompts:
        assert (local in prompt, outsider in prompt) == ((True, False) if agent < 4 else (False, True))
        assert ("three other fishermen" in prompt) == (month_ < 4)


def test_every_discussion_opens_with_john_and_the_collapse_months_is_held(tmp_path: Path) -> None:
    (summary,) = run_experiment(CommonsGame(newcomer=True), tmp_path / "out", seed=3)
    assert summary["outcome"] == "collapsed"
    collapse = summary["collapse_month"]
    store = Store(tmp_path / "out")
    steps = [(context["month"], context["kind"], context.get("name")) for context in (
        json.loads(text) for (text,) in store.rows("SELECT context FROM calls WHERE run = 1 AND attempt = 0 ORDER BY t"))]
    store.close()
    for month_ in range(1, collapse + 1):
        spoken = [name for m, kind, name in steps if m == month_ and kind == "utterance"]
        assert spoken and spoken[0] == "John"
        assert any(m == month_ and kind == "reflection" for m, kind, _ in steps)  # the collapse month's too
    assert max(m for m, _, _ in steps) == collapse


def test_importance_is_rated_where_govsim_rates_it(tmp_path: Path) -> None:
    """Conversations and insights are rated; the stock, the catch, the universalization
    sentence and the agreed limit are always retrieved and never rated."""
    game = CommonsGame(months=2, universalization=True)
    run_experiment(game, tmp_path / "out", seed=3)
    store = Store(tmp_path / "out")
    rated = [json.loads(context) for (context,) in store.rows(
        "SELECT context FROM calls WHERE run = 1 AND attempt = 0 AND context LIKE '{\"kind\":\"importance\"%'")]
    store.close()
    assert rated and {situation["memory_kind"] for situation in rated} == {"chat", "insight"}
    assert not any(situation["memory"].startswith(("Before everyone", "Given the current", "The community agreed"))
                   or " wanted to catch " in situation["memory"] for situation in rated)


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
    assert newcomer["equality"] < default["equality"] and newcomer["survival_months"] < 15
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
from agentsim.parts import StandInPart

MARKER = Path(os.environ["COMMONS_KILL_MARKER"])


class KillMidDiscussion:
    """SIGKILLs the process at the third utterance of month 3's discussion, once."""

    def answer(self, request):
        text = request.messages[-1].content
        conversation = text.split("Conversation so far:")[-1]
        if "Output format:" in text and "Date: 2024-03-30" in text and conversation.count("\\n-") >= 3 and not MARKER.exists():
            MARKER.write_text("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        return None


class Killing(CommonsGame):
    def standin_part(self) -> StandInPart:
        return StandInPart(rules=[KillMidDiscussion(), *super().standin_part().rules])


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


def test_report_and_transcript_read_commons_directories_and_a_truncated_run_is_left_out_of_the_survival_rate(
        tmp_path: Path) -> None:
    """The conditions' grid and a fishing run cut by `--set max_rounds=20` before month 12,
    reported together: the cut run is truncated, censored, and not counted in the survival rate."""
    results = tmp_path / "results"
    out, cut_out = results / "grid", results / "cut"
    assert cli(str(ROOT / "scenarios" / "commons_conditions.py"), "--runs", "1", "--set", "months=5", "--no-live",
               "--out", str(out)).returncode == 0
    cut = cli(str(ROOT / "scenarios" / "commons_fishing.py"), "--runs", "1", "--no-live", "--set", "max_rounds=20",
              "--out", str(cut_out))
    assert cut.returncode == 0, cut.stderr
    (run,) = json.loads((cut_out / "summary.json").read_text())["runs"]
    assert run["stop_reason"] == "max_rounds" and run["months"] < 12
    assert run["outcome"] == "truncated" and run["survived"] is None and run["collapse_month"] is None
    assert "outcome: truncated" in cli("commons-transcript", str(cut_out), "--run", "1").stdout

    report = cli("report", str(results))
    assert report.returncode == 0, report.stderr
    index = json.loads((results / "report" / "report.json").read_text())
    assert "commons" in index["sections"]
    assert {"commons_resource", "commons_survival"} <= {figure["name"] for figure in index["figures"]}
    header, *lines = (results / "report" / "commons_metrics.csv").read_text().splitlines()
    rows = {row["condition"]: row for row in (dict(zip(header.split(","), line.split(","))) for line in lines)}
    assert set(rows) == {"default", "universalization", "newcomer", "no-communication"}
    default = rows["default"]  # the grid's default run survived its 5 months; the cut run is not a failure
    assert (default["runs"], default["truncated"], float(default["survival_rate"])) == ("1", "1", 1.0)
    survival = [line.split(",") for line in (results / "report" / "commons_survival.csv").read_text().splitlines()]
    assert [(int(month), float(share)) for group, month, share, _ in survival[1:] if group.endswith("default")] == [
        (0, 1.0)]  # censored, never an event

    shown = cli("commons-transcript", str(out), "--run", "1")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "== Month 1" in text and "== Month 2" in text and "Mayor: Ladies and gentlemen" in text
    assert "Agreed limit:" in text and "Harvest: John wanted" in text and "Reflection, John:" in text
    prompts = cli("transcript", str(out), "--run", "4")  # every call's prompt: the no-communication cell's
    assert prompts.returncode == 0, prompts.stderr
    assert "[user]" in prompts.stdout and "[system]" not in prompts.stdout and "Date: 2024-02-01" in prompts.stdout
    assert "opportunity to communicate" not in prompts.stdout and "Ladies and gentlemen" not in prompts.stdout
    talk = cli("transcript", str(out), "--run", "1")
    assert "opportunity to communicate" in talk.stdout and "Conversation conclusion by me:" in talk.stdout
    assert cli("commons-transcript", str(out), "--run", "9").returncode == 2


def test_a_context_alone_rebuilds_its_conditions_prompt() -> None:
    silent = CommonsSituation(kind="harvest", month=2, agent=0, name="John", others=("Kate",), stock=60, silent=True,
                              date="2024-02-01", memories=(("2024-02-01", "Before everyone fishes, there are 60 tons"),))
    greedy = CommonsSituation(kind="harvest", month=4, agent=1, name="Kate", others=("John",), stock=80, role="newcomer")
    default_game = CommonsGame()  # the grid's base parameters, as a generic reader would rebuild with
    system = default_game.codec.rebuild_messages(silent.encode())[0].content
    assert "opportunity to communicate" not in system and "along with one other fisherman" in system.replace("fishermen", "fisherman")
    assert "you just want to make money" in default_game.codec.rebuild_messages(greedy.encode())[0].content
    assert CommonsSituation.decode(silent.encode()) == silent


def test_the_order_answers_arrive_in_changes_nothing(tmp_path: Path) -> None:
    game = CommonsGame(months=4, newcomer=True, newcomer_month=2, standin=CommonsStandInSettings(invalid_rate=0.2))
    run_experiment(game, tmp_path / "immediate", seed=4)
    for salt in (1, 2):
        run_experiment(game, tmp_path / f"jittery{salt}", seed=4,
                       backend=lambda scenario, salt=salt: JitteryStandIn(scenario.standin_part().rules, salt))
        assert dump(tmp_path / f"jittery{salt}" / "agentsim.db") == dump(tmp_path / "immediate" / "agentsim.db")
