"""The game layer (agentsim.gamekit): games written in one file, end to end on the stand-in.

A game is built here from the documented API alone (docs/games-layer.md) and run to a report;
the three scenario files on the layer run from the command line; an interrupted run (halted
between rounds, or cancelled in the middle of a sequential round) resumes to the same moves;
unreadable replies become recorded fallbacks that no mean counts; the choice grammars; a
mixed-model population; eliminations with targets; a kept conversation; private values."""

from __future__ import annotations

import asyncio
import io
import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT
from rich.console import Console
from servers import ScriptedServer
from test_resume import killed_and_resumed_as_whole

import agentsim
from agentsim import checkpoints
from agentsim.analysis.transcript import write_transcript
from agentsim.cli import main
from agentsim.errors import UserError
from agentsim.gamekit import Ask, Game, GameParams, Number, Options, Split, Target
from agentsim.gamekit.engine import engine_of
from agentsim.live import render
from agentsim.llm.base import Completion, Request
from agentsim.llm.grammars import to_gbnf
from agentsim.llm.standin import StandInModel
from agentsim.model import BackendShare, PopulationModel
from agentsim.runner import RunView
from agentsim.scenario_files import load_scenario
from agentsim.store import Store


# --- a game written in the test, from the documented API alone ---------------------------------
@dataclass(frozen=True, kw_only=True)
class AuctionParams(GameParams):
    agents: int = 6
    max_rounds: int = 4
    top: int = 100


class SealedBid(Game[AuctionParams]):
    """A first-price sealed-bid auction: a private valuation per player and round, the highest
    bid wins (ties to the lower player number) and pays its bid."""

    name = "sealed_bid_test"
    Params = AuctionParams
    rules = "You are {player} in a first-price sealed-bid auction among {players} bidders, {rounds} rounds."
    question = "Round {round}: the item is worth {valuation} to you. What do you bid?"

    def private(self, player, rng):
        return {"valuation": rng.randint(1, self.params.top)}

    def choice(self, player):
        return Number(0, self.params.top)

    def outcome(self, round):
        bids = round.choices
        winner = max(bids, key=lambda player: (bids[player], -player.index))
        round.win(winner)
        round.pay(winner, winner.private["valuation"] - bids[winner])
        round.tell(None, f"The highest bid was {bids[winner]}.")
        round.record(winner=winner.index, winning_bid=bids[winner], valuation=winner.private["valuation"])

    def standin_choice(self, ask, rng):
        return rng.randint(0, ask.fact("valuation"))  # shade the bid below the valuation

    def score(self, rounds):
        bids = [group["data"]["winning_bid"] for line in rounds for group in line["groups"]]
        return sum(bids) / len(bids)


def test_a_game_written_from_the_documented_api_runs_to_a_report(tmp_path: Path) -> None:
    results = agentsim.run(SealedBid(), out=tmp_path / "auction", runs=2, seed=3)
    rounds = results.rounds()
    assert len(rounds) == 8 and set(rounds["kit"]) == {1}
    moves = results.moves()
    contexts = {(run, t, agent): json.loads(context) for run, t, agent, context in results.store.rows(
        "SELECT run, t, agent, context FROM decisions WHERE attempt = 0")}
    store = Store(tmp_path / "auction")
    for run, _round, text in store.rows("SELECT run, round, stats FROM rounds"):
        (group,) = json.loads(text)["groups"]
        bids = {player: int(action) for player, _move, _kind, action, _fallback in group["moves"]}
        winner = max(bids, key=lambda player: (bids[player], -player))
        assert group["data"]["winner"] == winner and group["winners"] == [winner]
        valuation = group["data"]["valuation"]
        assert group["payoffs"] == [[winner, valuation - bids[winner]]]
        # the valuation the winner was shown is the one it was paid by (a private value from the seed)
        shown = [facts for (r, _t, agent), facts in contexts.items() if r == run and agent == winner]
        assert any(dict(context["f"]).get("valuation") == valuation for context in shown)
    store.close()
    assert not moves["fallback"].all()
    summaries = json.loads((tmp_path / "auction" / "summary.json").read_text())["runs"]
    for summary in summaries:
        lines = [json.loads(text) for (text,) in results.store.rows(
            "SELECT stats FROM rounds WHERE run = ? ORDER BY round", (summary["run"],))]
        winning = [line["groups"][0]["data"]["winning_bid"] for line in lines]
        assert summary["score"] == pytest.approx(sum(winning) / len(winning))
    html = results.report()
    index = json.loads((html.parent / "report.json").read_text())
    assert "gamekit" in index["sections"]
    assert {"gamekit_sealed_bid_test_rounds", "gamekit_sealed_bid_test_by_model", "gamekit_sealed_bid_test_runs"} <= {
        item["name"] for item in index["figures"] + index["tables"]}
    out = io.StringIO()
    assert write_transcript(tmp_path / "auction", out, run=1, agent=0) >= 4
    assert "first-price sealed-bid auction" in out.getvalue() and "What do you bid?" in out.getvalue()
    prompts = results.decisions(prompts=True)
    assert prompts["prompt"].dropna().str.contains("the item is worth").all()


# --- the scenario files ------------------------------------------------------------------------
def _lines(out: Path, run: int = 1) -> list[dict[str, Any]]:
    store = Store(out)
    lines = [json.loads(text) for (text,) in store.rows("SELECT stats FROM rounds WHERE run = ? ORDER BY round", (run,))]
    store.close()
    return lines


def test_public_goods_draws_groups_of_four_every_round_and_pays_by_the_rules(tmp_path: Path) -> None:
    path = ROOT / "scenarios" / "public_goods.py"
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 60
    out = tmp_path / "pg"
    assert main([str(path), "--no-live", "--out", str(out), "--runs", "1", "--set", "max_rounds=4"]) == 0
    lines = _lines(out)
    assert len(lines) == 4
    partitions = []
    for line in lines:
        groups = line["groups"]
        assert len(groups) == 4 and all(len(group["players"]) == 4 for group in groups)
        assert sorted(player for group in groups for player in group["players"]) == list(range(16))
        partitions.append(frozenset(frozenset(group["players"]) for group in groups))
        for group in groups:
            given = {player: int(action) for player, *_, action, _fallback in group["moves"]}
            share = sum(given.values()) * 1.6 / 4
            assert dict(map(tuple, group["payoffs"])) == pytest.approx({p: 10 - g + share for p, g in given.items()})
            assert group["data"]["total"] == sum(given.values())
    assert len(set(partitions)) == 4  # redrawn every round
    assert agentsim.open(out).report().is_file()


def test_the_ultimatum_game_asks_the_responder_after_the_offer(tmp_path: Path) -> None:
    path = ROOT / "scenarios" / "ultimatum.py"
    out = tmp_path / "ultimatum"
    assert main([str(path), "--no-live", "--out", str(out), "--runs", "1", "--set", "max_rounds=3"]) == 0
    for line in _lines(out):
        for group in line["groups"]:
            (proposer, _, _, offer, _), (responder, _, _, answer, _) = sorted(group["moves"], key=lambda m: m[1])
            assert [move for _, move, *_ in sorted(group["moves"], key=lambda m: m[1])] == ["offer", "respond"]
            paid = dict(map(tuple, group["payoffs"]))
            assert group["data"] == {"offer": int(offer), "accepted": answer == "accept"}
            assert paid == ({proposer: 10 - int(offer), responder: int(offer)} if answer == "accept" else {})
    out_text = io.StringIO()
    write_transcript(out, out_text, run=1)
    assert "The proposer offers you" in out_text.getvalue()


def test_the_trust_game_triples_what_is_sent(tmp_path: Path) -> None:
    out = tmp_path / "trust"
    assert main([str(ROOT / "scenarios" / "trust_game.py"), "--no-live", "--out", str(out), "--runs", "1"]) == 0
    (line,) = _lines(out)
    assert len(line["groups"]) == 10
    for group in line["groups"]:
        sent, returned = group["data"]["sent"], group["data"]["returned"]
        trustor, trustee = group["players"]
        assert 0 <= returned <= 3 * sent
        assert dict(map(tuple, group["payoffs"])) == {trustor: 10 - sent + returned, trustee: 3 * sent - returned}


# --- resume --------------------------------------------------------------------------------------
class _Suspending:
    """The stand-in behind an await, so that a round's players are asked as tasks (and a
    round can be cancelled half-way, with a proposal in and its response not)."""

    immediate = False

    def __init__(self, rules: Any) -> None:
        self.inner = StandInModel(rules)
        self.name = self.inner.name

    async def complete(self, request: Request) -> Completion:
        await asyncio.sleep(0)
        return self.inner.answer(request)

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("file", ["public_goods.py", "ultimatum.py", "centipede.py"])
def test_an_interrupted_run_resumes_to_the_same_moves(file: str) -> None:
    scenario = load_scenario(ROOT / "scenarios" / file)[0].with_params(agents=8, max_rounds=5)

    def fresh() -> PopulationModel:
        return PopulationModel(scenario, seed=7, backends=[BackendShare(_Suspending(scenario.standin_part().rules))])

    async def go() -> tuple[Any, Any, int]:
        whole = fresh()
        await whole.arun()
        halted = fresh()
        for _ in range(2):
            await halted.astep()
        task = asyncio.get_running_loop().create_task(halted.astep())
        for _ in range(3):  # part of round 3 asked: some answers in, none resolved
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        blob = halted.checkpoint()
        pending = len(checkpoints.loads(blob)["pending"])
        resumed = fresh()
        await resumed.scheduler.resume(resumed.restore(blob))
        await resumed.arun()
        return checkpoints.loads(whole.checkpoint()), checkpoints.loads(resumed.checkpoint()), pending

    whole, resumed, pending = asyncio.run(go())
    assert pending > 0  # the checkpoint was taken in the middle of a round
    assert whole["metrics"].rounds == resumed["metrics"].rounds
    assert whole["state"] == resumed["state"]


# --- fallbacks, grammars, populations ---------------------------------------------------------------
def test_unreadable_replies_become_recorded_fallbacks_outside_every_mean(tmp_path: Path) -> None:
    path = str(ROOT / "scenarios" / "public_goods.py")
    out = tmp_path / "unreadable"
    assert main([path, "--no-live", "--out", str(out), "--runs", "1", "--set", "max_rounds=3", "--set", "max_reasks=0",
                 "--set", "standin.invalid_rate=0.5"]) == 0
    store = Store(out)
    moves = list(store.rows("SELECT t, agent, action, fallback FROM moves WHERE run = 1"))
    fallbacks = [row for row in moves if row[3]]
    assert 0 < len(fallbacks) < len(moves)
    unreadable = list(store.rows("SELECT COUNT(*) FROM decisions WHERE run = 1 AND error IS NOT NULL AND fallback = 1"))
    assert unreadable[0][0] == len(fallbacks)  # each fallback's call is recorded with the reason it was unusable
    store.close()
    lines = _lines(out)
    assert sum(line["fallbacks"] for line in lines) == len(fallbacks)
    for line in lines:
        chosen = [int(action) for group in line["groups"] for _, _, _, action, fallback in group["moves"] if not fallback]
        assert line["moves"]["choose"]["choices"] == len(chosen)
        assert line["moves"]["choose"]["mean"] == pytest.approx(sum(chosen) / len(chosen))


def test_choices_read_replies_and_refuse_unusable_ones() -> None:
    number = Number(0, 10)
    assert number.read("I contribute 7 tokens.") == ("7", None)
    assert number.read("Of my 10 tokens I give 4") == ("4", None)
    assert number.read("Between 3 and 5, say.")[0] is None
    assert number.read("11")[1] == "11 is not from 0 to 10"
    assert number.read("3.5")[1] == "3.5 is not a whole number"
    assert Number(0, 1, integer=False).read("0.25") == ("0.25", None)
    options = Options("accept", "reject")
    assert options.read("I ACCEPT.") == ("accept", None) and options.read("accept or reject?")[0] is None
    split = Split(3, 100)
    assert split.read("50, 30, 20") == ("50,30,20", None)
    assert split.read("50, 30, 30")[1] == "adds up to 110, not 100"
    assert split.value("50,30,20") == (50, 30, 20)
    target = Target("Player 1", "Player 10")
    assert target.read("Player 10.") == ("Player 10", None)
    keyed = Number(0, 100, key="chosen_number")
    assert keyed.read('{"explanation": "2/3 of 50 is 33", "chosen_number": "33"}') == ("33", None)
    assert keyed.read(keyed.reply(77)) == ("77", None) and keyed.reply(77) == '{"chosen_number": "77"}'
    assert Split(3, 100, key="proposal").read('{"proposal": [50, 30, 20], "why": "3 pirates"}') == ("50,30,20", None)
    assert Options("yes", "no", key="vote").read('{"vote": "no", "reason": "yes, I said no"}') == ("no", None)
    rng = random.Random(0)
    for _ in range(50):
        assert sum(split.draw(rng)) == 100
        assert split.read(split.reply(split.draw(rng)))[1] is None
        assert number.read(number.reply(number.draw(rng)))[1] is None


def test_the_choice_grammar_goes_with_each_ask() -> None:
    number = Number(0, 10).grammar()
    assert [reply for reply, _ in number.choices] == [f"{value}." for value in range(11)]
    assert to_gbnf(number).startswith('root ::= "0." | "1."')
    assert Number(0, 1000).grammar().kind == "regex" and not Number(0, 1000).options
    assert Split(3, 100).grammar().value.startswith("[0-9]+")
    scenario = load_scenario(ROOT / "scenarios" / "ultimatum.py")[0].with_params(agents=4, max_rounds=1,
                                                                                 constrained_decoding=True)
    seen: list[Request] = []

    class Recording(StandInModel):
        def answer(self, request: Request) -> Completion:
            seen.append(request)
            return super().answer(request)

    model = PopulationModel(scenario, seed=1, backends=[BackendShare(Recording(scenario.standin_part().rules))])
    asyncio.run(model.arun())
    kinds = {request.situation.move: request.grammar for request in seen if request.grammar is not None}
    assert len(kinds) == 2
    assert {reply for reply, _ in kinds["respond"].choices} == {"accept.", "reject."}
    assert len(kinds["offer"].choices) == 11
    assert all(request.options == request.situation.options for request in seen)


def test_a_mixed_population_is_measured_per_model(tmp_path: Path) -> None:
    out = tmp_path / "mixed"
    assert main([str(ROOT / "scenarios" / "public_goods.py"), "--no-live", "--out", str(out), "--runs", "1",
                 "--set", "max_rounds=3", "--population", "stand-in:a=8,stand-in:b=8"]) == 0
    lines = _lines(out)
    assert all(set(line["by_model"]) == {"stand-in:a", "stand-in:b"} for line in lines)
    assert all(line["by_model"]["stand-in:a"]["players"] == 8 for line in lines)
    (summary,) = json.loads((out / "summary.json").read_text())["runs"]
    assert set(summary["mean_choice_by_model"]) == {"stand-in:a", "stand-in:b"}
    table = (agentsim.open(out).report().parent / "gamekit_public_goods_by_model.csv").read_text()
    assert "stand-in:a" in table and "stand-in:b" in table


# --- eliminations, conversations ---------------------------------------------------------------------
class LastStanding(Game[GameParams]):
    """Each round every live player names another; the most named (ties: the higher number)
    leaves, until one is left."""

    name = "last_standing_test"
    rules = "You are {player}; {players} players are left."

    def choice(self, player):
        return Target()

    def outcome(self, round):
        named = Counter(round.choices.values())
        out = max(named, key=lambda player: (named[player], player.index))
        round.eliminate(out, "named most often")
        if len(round.players) == 2:
            (last,) = [player for player in round.players if player != out]
            round.win(last)
            round.end(f"{last.name} is the last one standing")


def test_targets_and_eliminations_end_the_game() -> None:
    scenario = engine_of(LastStanding(agents=5, max_rounds=10))
    seen: list[Ask] = []

    class Recording(StandInModel):
        def answer(self, request: Request) -> Completion:
            seen.append(request.situation)
            return super().answer(request)

    model = PopulationModel(scenario, seed=2, backends=[BackendShare(Recording(scenario.standin_part().rules))])
    asyncio.run(model.arun())
    assert model.rounds_done == 4 and model.stop_reason is not None and "last one standing" in model.stop_reason
    out: set[str] = set()
    for line in model.metrics.lines():
        (group,) = line["groups"]
        asked = {scenario.game.player_name(player) for player, *_ in group["moves"]}
        assert not asked & out
        out |= {scenario.game.player_name(player) for player, _ in group["eliminated"]}
    for ask in seen:
        assert ask.player not in ask.choice.options and len(ask.choice.options) == ask.fact("players") - 1


def test_a_kept_conversation_shows_each_player_its_own_earlier_turns() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "public_goods.py")[0].with_params(agents=4, max_rounds=3,
                                                                                    conversation=True)
    seen: list[Request] = []

    class Recording(StandInModel):
        def answer(self, request: Request) -> Completion:
            seen.append(request)
            return super().answer(request)

    model = PopulationModel(scenario, seed=4, backends=[BackendShare(Recording(scenario.standin_part().rules))])
    asyncio.run(model.arun())
    third = next(request for request in seen if request.situation.round == 3 and request.situation.player == "Player 1")
    roles = [message.role for message in third.messages]
    assert roles[:6] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert third.messages[-1].content.startswith("Round 2:")  # last round's result opens the turn
    first_reply = next(request for request in seen if request.situation.round == 1
                       and request.situation.player == "Player 1")
    assert third.messages[1].content == first_reply.messages[-1].content


# --- a real client over HTTP: concurrency, the response cache and --replay -----------------------------
class _Midpoint(ScriptedServer):
    """An OpenAI-compatible server that answers a layer game's prompt as a player would: the
    middle of the range it asks for, or the first option it lists; it counts what it serves."""

    async def _chat(self, request: Any) -> Any:
        from aiohttp import web

        self.requests += 1
        self.open = getattr(self, "open", 0) + 1
        self.most_open = max(getattr(self, "most_open", 0), self.open)
        await asyncio.sleep(0.02)  # a model's latency: what is asked at once is in flight at once
        self.open -= 1
        body = await request.json()
        asked = body["messages"][-1]["content"]
        numbers = re.search(r"from (\d+) to (\d+)", asked)
        options = re.search(r"exactly one of: ([^.]+)\.", asked)
        text = (str((int(numbers[1]) + int(numbers[2])) // 2) if numbers else
                options[1].split(", ")[0] if options else "?")
        return web.json_response({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}})


def test_a_mixed_population_over_http_replays_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    server = _Midpoint()
    try:
        population = f"stand-in=4,openai:mid@{server.url}/v1=4"
        common = [str(ROOT / "scenarios" / "ultimatum.py"), "--no-live", "--runs", "2", "--set", "agents=8",
                  "--set", "max_rounds=3", "--population", population, "--cache", str(tmp_path / "cache.db")]
        assert main([*common, "--out", str(tmp_path / "asked")]) == 0
        assert server.requests > 0
        assert server.most_open > 1  # a round's players (and the runs) are asked concurrently
    finally:
        server.stop()
    assert main([*common, "--out", str(tmp_path / "replayed"), "--replay"]) == 0  # the server is gone: the cache answers
    moves = [sorted(Store(tmp_path / name).rows("SELECT run, t, agent, action, payoff, fallback FROM moves"))
             for name in ("asked", "replayed")]
    assert moves[0] == moves[1] and len(moves[0]) == 2 * 3 * 8
    labels = {model for (model,) in Store(tmp_path / "asked").rows("SELECT DISTINCT model FROM agents")}
    assert len(labels) == 2
    for line in _lines(tmp_path / "asked"):
        for group in line["groups"]:
            for player, move, _, action, fallback in group["moves"]:
                if player >= 4:  # the HTTP model's agents: the midpoint, and the first option
                    assert not fallback and action == ("5" if move == "offer" else "accept")


def test_kill_9_then_resume_records_what_an_uninterrupted_run_does(tmp_path: Path) -> None:
    """The public goods game killed with SIGKILL part-way, then `--resume`d: every recorded row
    (moves, calls, round lines, run summaries; wall-clock columns aside) as the uninterrupted run's."""
    settings = [str(ROOT / "scenarios" / "public_goods.py"), "--set", "agents=16", "--set", "max_rounds=50", "--runs", "2",
                "--seed", "4", "--checkpoint-seconds", "0", "--no-live"]
    killed_and_resumed_as_whole(settings, tmp_path, after_rounds=15)


def test_the_live_view_shows_the_mean_choice_the_shares_and_the_payoff() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "ultimatum.py")[0].with_params(agents=6, max_rounds=2)
    model = PopulationModel(scenario, seed=3, backends=[BackendShare(StandInModel(scenario.standin_part().rules))])
    asyncio.run(model.arun())
    figures = model.readout.live_figures(model)
    latest = model.metrics.line(1)
    assert figures.shares == latest["moves"]["respond"]["shares"] and figures.shares_label == "respond"
    assert dict(figures.lines)["mean offer"] == f"{latest['moves']['offer']['mean']:.2f} in round 2"
    view = RunView(run=1, seed=3, status="done", rounds_done=2, max_rounds=2, interactions=6, stop_reason=None,
                   metrics=figures, usage={}, calls_per_second=0.0)
    console = Console(width=110, record=True, color_system=None, file=io.StringIO())
    console.print(render({"scenario": "ultimatum", "backend": "stand-in", "seed": 3, "runs": 1}, [view]))
    screen = console.export_text()
    assert "mean offer" in screen and "mean payoff" in screen and "accept" in screen


def test_a_game_without_its_rules_is_refused_in_one_line(tmp_path: Path) -> None:
    class Unfinished(Game[GameParams]):
        name = "unfinished_test"

        def choice(self, player):
            return Number(0, 3)

    with pytest.raises(UserError, match="defines no `outcome"):
        agentsim.run(Unfinished(agents=2, max_rounds=1), out=tmp_path / "unfinished")
