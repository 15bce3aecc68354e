"""Cultural evolution (Donor game, Stag Hunt): selection, the reputation chain, payoffs
against hand-computed games, fallbacks, prompts rebuilt from the store, exact resume."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, JitteryStandIn, Quiet, cli, dump, run_experiment

from agentsim.games.evolution import DonorGame, EvolutionStandInSettings, StagHunt
from agentsim.games.evolution.donor import chain_shown, round_robin
from agentsim.games.evolution.parsers import parse_donation, parse_strategy
from agentsim.games.evolution.population import phases, ranking, select
from agentsim.games.evolution.prompts import DonorView, decode
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.store import Store


class Scripted:
    """A backend that plays a fixed script: strategies and norms are fixed sentences; a donor
    gives `shares[name]` of what it holds (or answers `answers[name]` verbatim); a hunter
    plays `hunts[name][round - 1]`. It records every request."""

    name = "stand-in"
    immediate = True

    def __init__(self, shares: dict[str, float] | None = None, hunts: dict[str, str] | None = None,
                 answers: dict[str, str] | None = None) -> None:
        self.shares, self.hunts, self.answers = shares or {}, hunts or {}, answers or {}
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        user = request.messages[1].content
        name = re.search(r"Your name is (\S+?)\.", user)
        who = name.group(1) if name else ""
        if "My strategy will be." in user:
            text = f"Thinking.\nMy strategy will be the one of {who}."
        elif "My cultural norms are:." in user:
            text = "My cultural norms are: 1. Share."
        elif "My revised cultural norms are:" in user:
            text = "My revised cultural norms are: 1. Share more."
        elif "My new cultural norms are:" in user:
            text = "My new cultural norms are: 1. Share less."
        elif "take the role of donor" in user:
            held = float(re.search(r"You currently have ([\d.]+) units", user).group(1).rstrip("."))  # type: ignore[union-attr]
            text = self.answers.get(who) or f"Justification: scripted.\nAnswer: {held * self.shares[who]:g}"
        else:
            round_ = int(re.search(r"It is now round (\d+)", user).group(1))  # type: ignore[union-attr]
            text = f"Justification: scripted.\nAnswer: {self.hunts[who][round_ - 1]}"
        return Completion(text=text, prompt_tokens=10, completion_tokens=10, model=self.name)

    async def aclose(self) -> None:
        return None


def run(scenario: Any, out: Path, backend: Any = None, **options: Any) -> tuple[list[dict[str, Any]], Store]:
    summaries = run_experiment(scenario, out, backend=(lambda _scenario: backend) if backend else None, **options)
    return summaries, Store(out)


# --- selection ---------------------------------------------------------------------------------

def test_selection_keeps_exactly_the_top_half_and_breaks_ties_by_the_seed() -> None:
    scores = [3.0, 9.0, 5.0, 5.0, 5.0, 1.0, 9.0, 0.0]
    for seed in range(50):
        kept = select(scores, 4, "top", random.Random(seed))
        assert len(kept) == 4 and {1, 6} <= set(kept)  # both 9s
        assert len(set(kept) & {2, 3, 4}) == 2  # two of the three tied 5s, never the 3
        assert kept == select(scores, 4, "top", random.Random(seed))  # the same seed, the same survivors
    tied_choices = {frozenset(select(scores, 4, "top", random.Random(seed))) for seed in range(50)}
    assert len(tied_choices) == 3  # every tied agent can be the one left out, depending on the seed
    assert ranking([2.0, 2.0], random.Random(0)) != ranking([2.0, 2.0], random.Random(3)) or \
        ranking([2.0, 2.0], random.Random(1)) != ranking([2.0, 2.0], random.Random(2))


def test_every_generation_of_a_run_keeps_its_top_half(tmp_path: Path) -> None:
    scenario = DonorGame(agents=6, rounds=3, generations=4, condition="norms")
    (summary,), store = run(scenario, tmp_path / "out")
    generations = summary["generations"]
    assert [record["generation"] for record in generations] == [1, 2, 3, 4]
    for record, following in itertools.pairwise(generations):
        payoffs = record["payoffs"]
        survivors = record["survivors"]
        assert len(survivors) == 3
        assert min(payoffs[name] for name in survivors) >= max(payoffs[name] for name in payoffs if name not in survivors)
        assert set(survivors) <= set(following["payoffs"])  # survivors play on
        newcomers = set(following["payoffs"]) - set(survivors)
        assert len(newcomers) == 3 and all(name.startswith(f"{following['generation']}_") for name in newcomers)
    store.close()


# --- the reputation chain ------------------------------------------------------------------------

def test_a_donor_sees_exactly_the_recipients_chain_and_nothing_more(tmp_path: Path) -> None:
    """Recomputed independently from the recorded donations: the recipient's last action as a
    donor, then that round's recipient's last action before it, and so on, three deep."""
    shares = {f"1_{k}": k / 10 for k in range(1, 9)}
    backend = Scripted(shares)
    scenario = DonorGame(agents=8, rounds=8, generations=1, games=1)
    _, store = run(scenario, tmp_path / "out", backend=backend)
    donations = {}  # round -> {donor: (recipient, percent)}
    views = []
    for (context,) in store.rows("SELECT context FROM calls WHERE attempt = 0 ORDER BY t"):
        view = decode(context)
        if isinstance(view, DonorView):
            views.append(view)
            donations.setdefault(view.round, {})[view.name] = (view.recipient, 100 * shares[view.name])
    store.close()
    assert len(views) == 8 * 4

    def last_action(agent: str, before: int) -> tuple[int, str, float] | None:
        rounds = [r for r in donations if r < before and agent in donations[r]]
        if not rounds:
            return None
        r = max(rounds)
        recipient, percent = donations[r][agent]
        return r, recipient, percent

    for view in views:
        expected, agent, before = [], view.recipient, view.round
        while len(expected) < 3:
            action = last_action(agent, before)
            if action is None:
                expected.append(f"{agent} did not have any previous interactions.")
                break
            r, recipient, percent = action
            expected.append(f"In round {r}, {agent} donated {percent:.2f}% of their resources to {recipient}.")
            agent, before = recipient, r
        assert view.chain == " ".join(expected)
        if view.round >= 4:  # a full chain: three entries, never two of the recipient's own actions
            assert view.chain.count("In round") == 3
            assert view.chain.count(f", {view.recipient} donated") == 1


def test_the_chain_shown_is_the_last_entries_newest_first() -> None:
    trace = ["A did not have any previous interactions.", "In round 1, C donated 10.00% of their resources to D.",
             "In round 2, B donated 20.00% of their resources to C.", "In round 3, A donated 30.00% of their resources to B."]
    assert chain_shown(trace, 3) == " ".join(reversed(trace[1:]))
    assert chain_shown(trace, 1) == trace[-1]
    assert chain_shown(trace[:1], 3) == trace[0]


# --- pairing -----------------------------------------------------------------------------------------

def test_a_donor_game_of_four_meets_each_ordered_pair_across_the_halves_exactly_once(tmp_path: Path) -> None:
    """Vallinder and Hughes's bipartiteRoundRobin + extendRounds, read back from the store:
    in each of the two games of a generation, every donor -> recipient pair across the two
    halves plays once, and the second game reverses the first's roles round by round."""
    backend = Scripted({f"1_{k}": 0.5 for k in range(1, 5)})
    _, store = run(DonorGame(agents=4, rounds=4, generations=1, games=2), tmp_path / "out", backend=backend)
    views = [view for (context,) in store.rows("SELECT context FROM calls WHERE attempt = 0 ORDER BY t")
             if isinstance(view := decode(context), DonorView)]
    store.close()
    by_game = {game: [(view.round, view.name, view.recipient) for view in views if view.game == game] for game in (1, 2)}
    first = by_game[1]
    half_a = {donor for round_, donor, _ in first if round_ == 1}
    half_b = {"1_1", "1_2", "1_3", "1_4"} - half_a
    cross = {pair for a in half_a for b in half_b for pair in ((a, b), (b, a))}
    assert len(cross) == 8
    for game in (1, 2):
        met = [(donor, recipient) for _, donor, recipient in by_game[game]]
        assert sorted(met) == sorted(cross)  # each ordered pair exactly once
    assert sorted((round_, recipient, donor) for round_, donor, recipient in by_game[2]) == sorted(first)
    for round_ in range(1, 5):  # every agent plays once a round
        assert sorted(name for r, donor, recipient in first if r == round_ for name in (donor, recipient)) == [
            "1_1", "1_2", "1_3", "1_4"]


def test_the_round_robin_is_vallinder_and_hughess_schedule() -> None:
    order = [10, 11, 12, 13, 14, 15]  # halves A = 10, 11, 12 and B = 13, 14, 15
    game = [round_robin(order, round_) for round_ in range(6)]
    assert game[0] == [(10, 13), (11, 14), (12, 15)]
    assert game[1] == [(15, 10), (13, 11), (14, 12)]  # B rotated by one, B donates
    assert game[2] == [(10, 14), (11, 15), (12, 13)]
    assert game[3:] == [[(b, a) for a, b in pairs] for pairs in game[:3]]  # extendRounds: the reversed copies
    assert round_robin(order, 4, reversed_roles=True) == game[1]
    assert round_robin(order, 6) == game[0]  # rounds beyond N start the schedule again


# --- reading what was written -----------------------------------------------------------------------

def test_the_parsers_read_what_was_written() -> None:
    """The strategy as the notebook splits it; donations with agentsim's lenient reader (the
    notebook's own: tests/test_reference_fidelity.py)."""
    assert parse_strategy("Thinking. My strategy will be to give half. Or: my strategy will be to give none.").action == (
        "My strategy will be to give half. Or: my strategy will be to give none.")
    assert parse_donation("Justification: x\nAnswer: -5", 10, "none", "agentsim").problem is not None
    assert parse_donation("Answer: 1,000", 2000, "none", "agentsim").action == "donate 1000"
    assert parse_donation("Answer: 2,5", 10, "none", "agentsim").action == "donate 2.5"
    assert parse_donation("Answer: **4.5** units", 10, "none", "agentsim").action == "donate 4.5"
    assert parse_donation("Answer: Punish, -2", 10, "costly", "agentsim").problem is not None
    assert parse_donation("Answer: Donate, 1,000", 1000, "costly", "agentsim").action == "donate 1000"
    assert parse_donation("Answer: 11", 10, "none", "agentsim").problem is not None


def test_the_stag_hunts_norms_sentence_is_worded_as_the_paper() -> None:
    assert "strategize in the way that aligns" in StagHunt(condition="norms").codec.system_prompt("1. Share.")
    assert "strategize in a way that aligns" in DonorGame(condition="norms").codec.system_prompt("1. Share.")


# --- payoffs ---------------------------------------------------------------------------------------

def test_donor_game_payoffs_match_a_hand_computed_game(tmp_path: Path) -> None:
    """1_1 gives half of what it holds, 1_2 a fifth; endowment 10, gain 2, three rounds, two
    games (roles reversed). Game A (1_1 first): 1_1 gives 5 (5, 20); 1_2 gives 4 (13, 16); 1_1
    gives 6.5 (6.5, 29). Game B: 1_2 gives 2 (14, 8); 1_1 gives 7 (7, 22); 1_2 gives 4.4
    (15.8, 17.6). Scores are the means of both games, whichever game came first."""
    backend = Scripted({"1_1": 0.5, "1_2": 0.2})
    (summary,), store = run(DonorGame(agents=2, rounds=3, generations=1, games=2), tmp_path / "out", backend=backend)
    (record,) = summary["generations"]
    assert record["payoffs"] == pytest.approx({"1_1": (6.5 + 15.8) / 2, "1_2": (29 + 17.6) / 2})
    assert record["mean_payoff"] == pytest.approx((11.15 + 23.3) / 2)
    assert record["donation_fraction"] == pytest.approx((0.5 + 0.2) / 2)
    assert record["survivors"] == ["1_2"]
    moves = sorted(store.rows("SELECT payoff FROM moves WHERE action LIKE 'donate%'"))
    store.close()
    assert sorted(-payoff for (payoff,) in moves) == pytest.approx(sorted([5, 4, 6.5, 2, 7, 4.4]))


def test_costly_punishment_takes_the_punished_units_away(tmp_path: Path) -> None:
    """1_1 punishes with 1 unit, 1_2 donates 2: 1_1 ends with 10 - 1 + 4 = 13, 1_2 with
    10 - 2 - 2 = 6, in either order."""
    backend = Scripted(answers={"1_1": "Justification: x\nAnswer: Punish, 1", "1_2": "Justification: x\nAnswer: Donate, 2"})
    scenario = DonorGame(agents=2, rounds=2, generations=1, games=1, punishment="costly")
    (summary,), store = run(scenario, tmp_path / "out", backend=backend)
    store.close()
    (record,) = summary["generations"]
    assert record["payoffs"] == pytest.approx({"1_1": 13.0, "1_2": 6.0})
    assert record["punishments"] == 1


def test_stag_hunt_payoffs_match_a_hand_computed_game(tmp_path: Path) -> None:
    """1_1 always hunts a stag; 1_2 a hare first, then stags: 0 + 10 + 10 and 7 + 10 + 10."""
    backend = Scripted(hunts={"1_1": ["STAG"] * 3, "1_2": ["HARE", "STAG", "STAG"]})
    scenario = StagHunt(agents=2, rounds=3, generations=1, hare_against_stag=7.0)
    (summary,), store = run(scenario, tmp_path / "out", backend=backend)
    (record,) = summary["generations"]
    assert record["payoffs"] == {"1_1": 20.0, "1_2": 27.0}
    assert record["cooperation_rate"] == pytest.approx(5 / 6)
    last = [request.messages[1].content for request in backend.requests if "It is now round 3" in request.messages[1].content]
    assert any("In round 1, you hunted a STAG and 1_2 hunted a HARE.\nIn round 2, you hunted a STAG and 1_2 hunted a STAG."
               in prompt for prompt in last)
    store.close()


# --- fallbacks, texts, prompts ------------------------------------------------------------------

def test_an_unreadable_donation_is_reasked_then_a_recorded_fallback_outside_the_fractions(tmp_path: Path) -> None:
    backend = Scripted({"1_2": 0.5}, answers={"1_1": "I would rather not say."})
    scenario = DonorGame(agents=2, rounds=2, generations=1, games=1, max_reasks=2)
    (summary,), store = run(scenario, tmp_path / "out", backend=backend)
    (record,) = summary["generations"]
    assert record["fallbacks"] == {"play": 1}
    assert record["donation_fraction"] == pytest.approx(0.5)  # 1_2's choice only
    attempts = list(store.rows("SELECT attempt, error, action FROM decisions WHERE reply = 'I would rather not say.'"))
    flagged = list(store.rows("SELECT action FROM moves WHERE fallback"))
    store.close()
    assert flagged == [(None,)]  # the store marks the move a fallback, for every analysis to leave out
    assert [attempt for attempt, _, _ in attempts] == [0, 1, 2]
    assert all(error for _, error, _ in attempts) and attempts[-1][2] is None


def test_every_prompt_is_rebuilt_exactly_from_the_store_and_every_text_is_kept(tmp_path: Path) -> None:
    scenario = DonorGame(agents=4, rounds=3, generations=3, condition="norms_neg",
                         standin=EvolutionStandInSettings(invalid_rate=0.3))
    sent: list[Request] = []

    class Recording(StandInModel):
        async def complete(self, request: Request) -> Completion:
            sent.append(request)
            return self.answer(request)

    (summary,), store = run(scenario, tmp_path / "out", backend=Recording(scenario.standin_part().rules))
    calls = list(store.rows("SELECT t, agent, attempt FROM calls ORDER BY t, agent, attempt"))
    assert len(calls) == len(sent) == summary["calls"]
    rebuilt = [store.messages(scenario, 1, t, agent, attempt) for t, agent, attempt in calls]
    assert sorted(map(repr, rebuilt)) == sorted(repr(request.messages) for request in sent)
    rosters = [json.loads(text)["roster"] for (text,) in store.rows("SELECT stats FROM rounds WHERE run = 1 ORDER BY round")]
    store.close()
    assert len(rosters) == 3
    for roster in rosters:
        assert all(entry["strategy"].startswith("My strategy will be") and entry["norms"] for entry in roster)
    assert "opposite of cooperative and altruistic" in rebuilt[4][1].content or any(
        "opposite of cooperative and altruistic" in messages[1].content for messages in rebuilt)


def test_norms_reach_the_system_prompt_only_in_the_norms_conditions(tmp_path: Path) -> None:
    for condition, expect in (("strategies", False), ("norms", True)):
        backend = Scripted({"1_1": 0.5, "1_2": 0.5})
        run(DonorGame(agents=2, rounds=1, generations=2, games=1, condition=condition), tmp_path / condition,
            backend=backend)[1].close()
        played = [request for request in backend.requests if "take the role of donor" in request.messages[1].content]
        assert all(("Your cultural norms are:" in request.messages[0].content) == expect for request in played)
        kinds = [decode_kind(request) for request in backend.requests]
        assert ("revise" in kinds and "mutate" in kinds) == expect


def decode_kind(request: Request) -> str:
    user = request.messages[1].content
    for marker, kind in (("My revised cultural norms are:", "revise"), ("My new cultural norms are:", "mutate"),
                         ("My cultural norms are:.", "elicit"), ("Here is the advice of", "inherit"),
                         ("My strategy will be.", "strategy")):
        if marker in user:
            return kind
    return "play"


def test_the_schedule_follows_algorithm_1() -> None:
    kinds = [phase.kind for phase in phases(DonorGame(agents=4, rounds=2, generations=2, games=2, condition="norms").params)]
    assert kinds == ["strategy", "elicit"] + ["play"] * 4 + ["inherit", "revise", "mutate"] + ["play"] * 4
    mutate = DonorGame(agents=4, rounds=1, generations=2, games=1, strategy_inheritance="mutate").params
    assert [phase.kind for phase in phases(mutate)] == ["strategy", "play", "mutate_strategy", "play"]


def test_the_lineage_names_each_newcomers_sources(tmp_path: Path) -> None:
    scenario = DonorGame(agents=4, rounds=2, generations=3, condition="norms", strategy_inheritance="mutate")
    (summary,), store = run(scenario, tmp_path / "out")
    store.close()
    result = cli("lineage", str(tmp_path / "out"), "--run", "1")
    assert result.returncode == 0, result.stderr
    survivors = summary["generations"][0]["survivors"]
    assert "2_1 (slot" in result.stdout and f"strategy mutated from {survivors[0]}; norms mutated from {survivors[0]}'s" in result.stdout
    assert f"strategy mutated from {survivors[1]}; norms mutated from {survivors[1]}'s" in result.stdout
    bad = cli("lineage", str(tmp_path / "out"), "--run", "7")
    assert bad.returncode == 2 and "no run 7" in bad.stderr


# --- exactness and resume ---------------------------------------------------------------------------

def test_a_run_does_not_depend_on_the_order_answers_come_back_in(tmp_path: Path) -> None:
    scenario = StagHunt(agents=6, rounds=3, generations=3, condition="norms")
    for salt in (1, 2):
        run(scenario, tmp_path / str(salt), backend=JitteryStandIn(scenario.standin_part().rules, salt=salt))[1].close()
    run(scenario, tmp_path / "plain")[1].close()
    assert dump(tmp_path / "1" / "agentsim.db") == dump(tmp_path / "2" / "agentsim.db") == dump(tmp_path / "plain" / "agentsim.db")


@pytest.mark.parametrize("where", ["within a round", "between generations"])
def test_interrupted_then_resumed_is_the_same_run(tmp_path: Path, where: str) -> None:
    """Cancelled at the 20th call (generation 1, in the middle of a game round) or at the
    first call of generation 2 (after selection, before the newcomers write)."""
    scenario = DonorGame(agents=6, rounds=3, generations=3, condition="norms")
    run(scenario, tmp_path / "whole", backend=JitteryStandIn(scenario.standin_part().rules, salt=5))[1].close()

    class Interrupting(JitteryStandIn):
        calls = 0
        cut = False

        async def complete(self, request: Request) -> Completion:
            Interrupting.calls += 1
            first_of_generation_2 = "Here is the advice of" in request.messages[1].content and not Interrupting.cut
            if (Interrupting.calls == 20) if where == "within a round" else first_of_generation_2:
                Interrupting.cut = True
                main.cancel()
            return await super().complete(request)

    async def interrupted() -> None:
        global main
        experiment = Experiment(ExperimentConfig(scenario=scenario, out=tmp_path / "cut", seed=1, checkpoint_seconds=0), Quiet())
        experiment.open()
        experiment.backends = {"stand-in": Interrupting(scenario.standin_part().rules, salt=5)}
        main = asyncio.ensure_future(experiment.run())
        with pytest.raises(asyncio.CancelledError):
            await main

    asyncio.run(interrupted())
    cut = dump(tmp_path / "cut" / "agentsim.db")
    assert {row[4] for row in cut["runs"]} == {"interrupted"}
    assert len(cut["rounds"]) == (1 if where == "between generations" else 0)  # generation rows recorded
    assert 0 < len(cut["encounters"]) < len(dump(tmp_path / "whole" / "agentsim.db")["encounters"])
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=tmp_path / "cut", seed=1, resume=True,
                                             checkpoint_seconds=0), Quiet())
    experiment.open()
    experiment.backends = {"stand-in": JitteryStandIn(scenario.standin_part().rules, salt=9)}
    asyncio.run(experiment.run())
    resumed, whole = dump(tmp_path / "cut" / "agentsim.db"), dump(tmp_path / "whole" / "agentsim.db")
    for table in ("agents", "encounters", "decisions", "rounds"):
        assert resumed[table] == whole[table]
    # Calls answered but cancelled with their round were paid for and are asked again: the
    # usage counters count them (calls, tokens, re-asks); the records and generations do not.
    paid = ("calls", "prompt_tokens", "completion_tokens", "usage_by_backend", "reasks", "invalid_replies", "fallbacks")
    after, before = (json.loads(rows["runs"][0][-1]) for rows in (resumed, whole))
    assert {k: v for k, v in after.items() if k not in paid} == {k: v for k, v in before.items() if k not in paid}
    assert after["calls"] >= before["calls"]


main: asyncio.Future[Any]

SLOW = ["--set", "agents=12", "--set", "rounds=6", "--set", "generations=8", "--runs", "1", "--seed", "4",
        "--checkpoint-seconds", "0", "--no-live"]


def _generations_recorded(database: Path) -> tuple[int, int]:
    try:
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=0.1)
        try:
            return (connection.execute("SELECT COUNT(*) FROM rounds").fetchone()[0],
                    connection.execute("SELECT COUNT(*) FROM encounters").fetchone()[0])
        finally:
            connection.close()
    except sqlite3.Error:
        return 0, 0


def _kill_when(out: Path, scenario: str, ready: Any, *extra: str) -> None:
    process = subprocess.Popen([sys.executable, "-m", "agentsim", scenario, "--out", str(out), *SLOW, *extra],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while not ready(*_generations_recorded(out / "agentsim.db")):
        assert process.poll() is None, "the run ended before it could be killed: " + (process.stderr.read() if process.stderr else "")
        assert time.monotonic() < deadline
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.stderr is not None
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL


def test_kill_9_between_and_within_generations_then_resume_records_the_same_run(tmp_path: Path) -> None:
    scenario = str(ROOT / "scenarios" / "donor_game.py")
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert cli(scenario, "--out", str(whole), *SLOW, timeout=180).returncode == 0
    everything = dump(whole / "agentsim.db")
    # first kill: within generation 1 (some encounters, no generation closed yet)
    _kill_when(killed, scenario, lambda generations, encounters: generations == 0 and encounters > 60)
    # second kill, after resuming: once generations have closed (between or just after a boundary)
    _kill_when(killed, scenario, lambda generations, encounters: generations >= 6, "--resume")
    partial = dump(killed / "agentsim.db")
    assert 0 < len(partial["encounters"]) < len(everything["encounters"])
    result = cli(scenario, "--out", str(killed), "--resume", *SLOW, timeout=180)
    assert result.returncode == 0, result.stderr
    assert dump(killed / "agentsim.db") == everything


# --- the acceptance commands ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["donor_game", "stag_hunt"])
def test_the_scenario_runs_three_replicates_of_each_condition_with_generations(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    result = cli(str(ROOT / "scenarios" / f"{name}.py"), "--runs", "3", "--set", "generations=3", "--out", str(out),
                 "--no-live", timeout=120)
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    conditions = {"donor_game": 4, "stag_hunt": 2}[name]
    assert len(summary["runs"]) == 3 * conditions and summary["stand_in"]
    for entry in summary["runs"]:
        assert entry["status"] == "done" and entry["stop_reason"] == "generations"
        assert [g["generation"] for g in entry["generations"]] == [1, 2, 3]
        assert all(len(g["survivors"]) == 2 and len(g["payoffs"]) == 4 for g in entry["generations"])
    report = cli("report", str(out), timeout=120)
    assert report.returncode == 0, report.stderr
    assert (out / "report" / f"evolution_payoff_{name}_1.png").is_file()
    rows = (out / "report" / f"evolution_payoff_{name}_1.csv").read_text().splitlines()
    assert len(rows) == 1 + 3 * conditions  # one figure compares every condition
