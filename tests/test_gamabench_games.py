"""GAMA-Bench's eight games as scenario files on the game layer (scenarios/gamabench/): each
runs on the stand-in, and every round's outcome (mean, winner, payoffs, eliminations) is worked
out here again, by the games' rules as the paper states them and written out in this file, from
the raw records the store keeps (each player's move and the round's record), never with the
functions of rules.py the games call; a few rounds are worked by hand; `score` reads the runs as
it reads imported ones; mixed populations, the response cache and --replay work."""

from __future__ import annotations

import asyncio
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT
from servers import ScriptedServer

import agentsim
from agentsim.cli import main
from agentsim.games.gamabench.rules import PARAMETERS
from agentsim.games.gamabench.scoring import score
from agentsim.llm.base import Completion, Request
from agentsim.model import BackendShare, PopulationModel
from agentsim.scenario_files import load_scenario

GAMES = ROOT / "scenarios" / "gamabench"
FILES = sorted(path.stem for path in GAMES.glob("*.py"))
SIMULTANEOUS = ("guessing_game", "bar_game", "divide_dollar", "public_goods", "diner_dilemma")


def run(game: str, out: Path, *options: str) -> list[dict[str, Any]]:
    assert main([str(GAMES / f"{game}.py"), "--out", str(out), *options]) == 0
    with agentsim.open(out) as results:
        return [json.loads(stats) for _, stats in results.store.rows("SELECT round, stats FROM rounds ORDER BY run, round")]


def expected(game: str, choices: list[Any]) -> tuple[dict[str, Any], list[float]]:
    """A simultaneous round's record and each player's payoff, by the game's rule (10 players,
    GAMA-Bench's defaults), written out here."""
    players = len(choices)
    if game == "guessing_game":
        mean = sum(choices) / players
        target = mean * 2 / 3
        winner = min(choices, key=lambda pick: abs(pick - target))  # the first of a tie, in seat order
        return ({"responses": choices, "mean": mean, "mean_ratio": target, "winner": winner,
                 "winner_num": choices.count(winner)}, [1.0 if pick == winner else 0.0 for pick in choices])
    if game == "bar_game":
        went = choices.count("go")
        fun = went / players <= 0.6  # at most 60% went: the bar is fun
        return ({"responses": choices, "go_num": went, "go_ratio": went / players, "winner": "go" if fun else "stay",
                 "utility": 10 if fun else 0}, [5.0 if choice == "stay" else 10.0 if fun else 0.0 for choice in choices])
    if game == "divide_dollar":
        total = sum(choices)
        return {"responses": choices, "total_proposal": total}, [float(bid) if total <= 100 else 0.0 for bid in choices]
    if game == "public_goods":
        total = sum(choices)
        return {"responses": choices, "total_tokens": total}, [20 - given + total * 2 / players for given in choices]
    cheap = choices.count("cheap")  # the Diner's Dilemma: cheap costs 10 and is worth 15, costly 20 and 20
    bill = 10 * cheap + 20 * (players - cheap)
    return ({"responses": choices, "cheap_player": cheap, "total_cost": bill,
             "cost_msg": f"{players - cheap} * 20 + {cheap} * 10 = {bill}", "avg_cost": bill / players},
            [(15 if choice == "cheap" else 20) - bill / players for choice in choices])


def test_there_are_eight_games_each_a_short_file() -> None:
    assert FILES == ["bar_game", "battle_royale", "diner_dilemma", "divide_dollar", "guessing_game", "pirate_game",
                     "public_goods", "sealed_bid_auction"]
    for game in FILES:
        lines = (GAMES / f"{game}.py").read_text().splitlines()
        assert len(lines) <= 82, f"{game}.py has {len(lines)} lines"


@pytest.mark.parametrize("game", FILES)
def test_round_outcomes_recompute_from_the_raw_records(game: str, tmp_path: Path) -> None:
    lines = run(game, tmp_path / "out")
    params = PARAMETERS[game] | {"player_num": 10}
    alive, records = set(range(10)), []
    for line in lines:
        (group,) = line["groups"]
        record, paid = group["data"], dict(group["payoffs"])
        moves = {player: action for player, _, _, action, _ in group["moves"]}
        assert set(group["players"]) == alive, "only the players still in the game play"
        if game in SIMULTANEOUS:
            choices = [moves[player] if game in ("bar_game", "diner_dilemma") else int(moves[player])
                       for player in group["players"]]
            outcome, payoffs = expected(game, choices)
            assert record.keys() == outcome.keys()
            for key, value in outcome.items():
                assert record[key] == (pytest.approx(value) if isinstance(value, float) else value), key
            assert [paid.get(player, 0) for player in group["players"]] == pytest.approx(payoffs)
            if game == "guessing_game":
                assert sorted(group["winners"]) == sorted(p for p in group["players"] if int(moves[p]) == record["winner"])
        elif game == "sealed_bid_auction":
            bids = [int(moves[player]) for player in group["players"]]
            assert record["responses"] == bids and len(set(record["valuations"])) == 10
            assert set(record["valuations"]) <= set(range(0, 201, 10))
            assert record["bid_winner_proposed"] == max(bids) == record["bid_winner_payment"]  # first price
            winner = int(record["bid_winner"].removeprefix("player_"))
            assert int(moves[winner]) == max(bids)
            value = record["valuations"][group["players"].index(winner)]
            assert paid == {player: (value - max(bids) if player == winner else 0) for player in group["players"]}
        elif game == "battle_royale":
            ((shooter, target),) = moves.items()
            assert record["player_shooting"] == str(shooter)
            assert record["initial_players"] == [[f"player_{index}", 35 + 5 * index] for index in sorted(alive)]
            assert record["shot_player"] == ("null" if target == "nobody" else target.removeprefix("player_"))
            hit = [int(player) for player, _ in group["eliminated"]]
            assert hit == ([int(record["shot_player"])] if record["out"] else [])
            alive -= set(hit)
        else:  # the Pirate Game
            proposer = min(group["players"])
            plan = [int(share) for share in moves[proposer].split(",")] if len(alive) > 1 else [100]
            assert record["gold_distribution"] == plan and sum(plan) == 100
            assert record["responses"] == ["accept", *(moves[p] for p in sorted(group["players"]) if p != proposer)]
            accepted = 2 * record["responses"].count("accept") >= len(record["responses"])  # at least half
            assert [player for player, _ in group["eliminated"]] == ([] if accepted else [proposer])
            assert paid == (dict(zip(sorted(group["players"]), plan)) if accepted else {})
            alive -= {player for player, _ in group["eliminated"]}
        records.append(record)
    if game == "pirate_game":
        assert lines[-1]["groups"][0]["ended"], "the game ends when a plan passes"
    base = "bar_game" if game == "bar_game" else game
    assert 0 <= score(base, params, records) <= 100


class Answers:
    """Every player answers the number or word `choices` gives it, in the game's own format."""

    name = "answers"
    immediate = True

    def __init__(self, choices: dict[int, Any]) -> None:
        self.choices = choices

    async def complete(self, request: Request) -> Completion:
        player = int(request.situation.player.rsplit("_", 1)[1])
        return Completion(text=f"{self.choices[player]}.")

    async def aclose(self) -> None:
        return None


def one_round(game: str, choices: list[Any], **changes: Any) -> dict[str, Any]:
    scenario = load_scenario(GAMES / f"{game}.py")[0].with_params(agents=len(choices), max_rounds=1, **changes)
    model = PopulationModel(scenario, seed=0, backends=[BackendShare(Answers(dict(enumerate(choices))))])
    model.step()
    (line,) = model.metrics.lines()
    (group,) = line["groups"]
    return {"data": group["data"], "paid": dict(group["payoffs"]), "winners": group["winners"]}


def test_rounds_worked_by_hand() -> None:
    """Four players (the rules' shares and sums are those of any number of players)."""
    guess = one_round("guessing_game", [30, 60, 20, 50])  # mean 40, 2/3 of it 26.67: 30 is nearest
    assert guess["data"]["mean"] == 40 and guess["data"]["winner"] == 30 and guess["winners"] == [0]
    crowded = one_round("bar_game", ["go", "go", "go", "stay"])  # 75% went: more than 60%, crowded
    assert crowded["data"]["winner"] == "stay" and crowded["paid"] == {0: 0, 1: 0, 2: 0, 3: 5}
    fun = one_round("bar_game", ["go", "stay", "go", "stay"])  # 50%: fun
    assert fun["paid"] == {0: 10, 1: 5, 2: 10, 3: 5}
    assert one_round("divide_dollar", [30, 30, 20, 20])["paid"] == {0: 30, 1: 30, 2: 20, 3: 20}  # exactly 100
    assert one_round("divide_dollar", [30, 30, 30, 11])["paid"] == {0: 0, 1: 0, 2: 0, 3: 0}  # 101: nobody gets anything
    goods = one_round("public_goods", [20, 0, 10, 10])  # 40 in the pot, doubled to 80, 20 each
    assert goods["paid"] == {0: 20, 1: 40, 2: 30, 3: 30}
    diner = one_round("diner_dilemma", ["cheap", "costly", "costly", "costly"])  # bill 10 + 60 = 70, 17.5 each
    assert diner["data"]["cost_msg"] == "3 * 20 + 1 * 10 = 70" and diner["paid"] == {0: -2.5, 1: 2.5, 2: 2.5, 3: 2.5}
    second = one_round("sealed_bid_auction", [40, 90, 70, 10], mode="second highest bid")
    assert second["data"]["bid_winner"] == "player_1" and second["data"]["bid_winner_payment"] == 70
    value = second["data"]["valuations"][1]
    assert second["paid"] == {0: 0, 1: value - 70, 2: 0, 3: 0}


def test_score_reads_agentsim_runs_as_it_reads_imported_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = run("divide_dollar", tmp_path / "dollar", "--runs", "2", "--population", "stand-in:a=5,stand-in:b=5")
    capsys.readouterr()
    assert main(["score", str(tmp_path / "dollar")]) == 0
    row = (tmp_path / "dollar" / "score.csv").read_text().splitlines()[1].split(",")
    by_run: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        by_run.setdefault(len(by_run) if line["round"] == 1 else len(by_run) - 1, []).append(line["groups"][0]["data"])
    expected = sum(score("divide_dollar", PARAMETERS["divide_dollar"], records) for records in by_run.values()) / 2
    assert row[:5] == ["stand-in:a+stand-in:b", "divide_dollar", "v1", "", "2"]
    assert float(row[5]) == pytest.approx(expected, abs=1e-3)
    assert set(lines[0]["by_model"]) == {"stand-in:a", "stand-in:b"}, "a mixed population is measured per model"


class NumberServer(ScriptedServer):
    """An OpenAI-compatible server answering as GAMA-Bench asks players to: a JSON object
    with a number drawn from the prompt's checksum."""

    async def _chat(self, request: Any) -> Any:
        from aiohttp import web

        self.requests += 1
        body = await request.json()
        number = zlib.crc32(json.dumps(body["messages"]).encode()) % 67
        return web.json_response({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                  "choices": [{"index": 0, "message": {"role": "assistant",
                                                                       "content": f'{{"chosen_number": "{number}"}}'},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


def test_a_game_over_http_replays_from_the_response_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = NumberServer()
    try:
        options = ["--backend", f"openai:m@{server.url}/v1", "--set", "agents=4", "--set", "max_rounds=3",
                   "--cache", str(tmp_path / "cache.db")]
        first = run("guessing_game", tmp_path / "first", *options)
        asked = server.requests
        assert asked >= 12 and all(not move[4] for line in first for move in line["groups"][0]["moves"]), \
            "4 players x 3 rounds, every JSON reply read (no fallback)"
        replayed = run("guessing_game", tmp_path / "replayed", *options, "--replay")
        assert server.requests == asked, "a replay sends no request"
        assert [line["groups"][0]["data"] for line in replayed] == [line["groups"][0]["data"] for line in first]
    finally:
        server.stop()


# The inputs each game passes to each of GAMA-Bench's prompts (its prompt_template/ format).
INPUTS = {"guessing_game": {"description": 6, "request": 5, "report": 7},
          "bar_game": {"description": 7, "request": 3, "report_explicit": 9, "report_implicit": 3},
          "divide_dollar": {"description": 4, "request": 3, "report": 6},
          "public_goods": {"description": 4, "request": 3, "report": 7},
          "diner_dilemma": {"description": 7, "request": 2, "report": 7},
          "sealed_bid_auction": {"description": 4, "request": 3, "report": 7},
          "battle_royale": {"description": 6, "request": 6, "report": 0, "report2": 0},
          "pirate_game": {"description": 4, "request1": 0, "request2": 0, "report": 0}}


def write_templates(root: Path) -> Path:
    """A prompt_template/ folder in GAMA-Bench's format, with texts written here: each names
    its game, kind and version and shows its inputs."""
    for game, kinds in INPUTS.items():
        (root / game).mkdir(parents=True)
        for kind, count in kinds.items():
            for version in ("v1", "v2"):
                shown = " ".join(f"in{index}=!<INPUT {index}>!" for index in range(count))
                parts = f"[{game}/{kind} {version}] {shown}"
                if kind.startswith("report"):
                    parts += "\n<part>///</part>\n(own answer)\n<part>///</part>\n(next)"
                (root / game / f"{kind}_{version}.txt").write_text(
                    f"Inputs listed here.\n\n<commentblockmarker>###</commentblockmarker>\n\n{parts}\n")
    return root


@pytest.mark.parametrize("game", FILES)
def test_gamabench_texts_are_read_from_the_users_prompt_template_folder(game: str, tmp_path: Path) -> None:
    folder = write_templates(tmp_path / "prompt_template")
    run(game, tmp_path / "out", "--set", f"prompt_templates={folder}", "--set", "version=v2", "--set", "max_rounds=2")
    with agentsim.open(tmp_path / "out") as results:
        calls = results.decisions(prompts=True)
    prompts = calls["prompt"].dropna().tolist()
    assert all(f"[{game}/description v2] in0=10" in prompt for prompt in prompts), prompts[0]
    if game == "battle_royale":
        assert "in2=player_0 in3=35 in4=1" in prompts[0], "the description names the player it is sent to"
        assert f"[{game}/request v2]" in prompts[0] and '{"action": "shoot" or "miss"' in prompts[0]
    if "request" in INPUTS[game] and game != "battle_royale":
        assert all(f"[{game}/request v2] in0=" in prompt for prompt in prompts)
    reports = [kind for kind in INPUTS[game] if kind.startswith("report") and INPUTS[game][kind]]
    if reports:
        last = calls["t"].max()
        later = [prompt for prompt, t in zip(calls["prompt"], calls["t"]) if isinstance(prompt, str) and t == last]
        assert later and all(any(f"[{game}/{kind} v2] in0=1" in prompt for kind in reports) for prompt in later)
        assert all("(own answer)" in prompt for prompt in later)


def test_a_missing_prompt_template_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(GAMES / "guessing_game.py"), "--set", f"prompt_templates={tmp_path / 'nowhere'}"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "prompt_templates" in error, error


class Suspending:
    """The stand-in answering after a suspension, as a remote backend does (so a round can be
    cut off part-way)."""

    immediate = False

    def __init__(self, rules: Any) -> None:
        from agentsim.llm.standin import StandInModel

        self.inner = StandInModel(rules)
        self.name = self.inner.name

    async def complete(self, request: Any) -> Any:
        await asyncio.sleep(0)
        return self.inner.answer(request)

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("game", ["battle_royale", "pirate_game", "sealed_bid_auction"])
def test_a_run_cut_off_mid_round_resumes_to_the_same_moves(game: str) -> None:
    from agentsim import checkpoints
    from agentsim.model import BackendShare, PopulationModel
    from agentsim.scenario_files import load_scenario

    scenario = load_scenario(GAMES / f"{game}.py")[0].with_params(max_rounds=6)

    def fresh() -> PopulationModel:
        return PopulationModel(scenario, seed=3, backends=[BackendShare(Suspending(scenario.standin_part().rules))])

    async def go() -> tuple[Any, Any]:
        whole = fresh()
        await whole.arun()
        halted = fresh()
        await halted.astep()
        task = asyncio.get_running_loop().create_task(halted.astep())
        for _ in range(3):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        resumed = fresh()
        await resumed.scheduler.resume(resumed.restore(halted.checkpoint()))
        await resumed.arun()
        return checkpoints.loads(whole.checkpoint()), checkpoints.loads(resumed.checkpoint())

    whole, resumed = asyncio.run(go())
    assert whole["metrics"].rounds == resumed["metrics"].rounds
    assert whole["state"] == resumed["state"]


def test_the_transcript_shows_a_kept_conversations_earlier_replies(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A game that keeps each player's conversation sends its earlier replies as assistant
    turns: the transcript prints the prompt as sent, those turns included."""
    out = tmp_path / "out"
    assert main([str(GAMES / "guessing_game.py"), "--no-live", "--runs", "1", "--set", "max_rounds=3",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["transcript", str(out), "--agent", "0", "--round", "3"]) == 0
    printed = capsys.readouterr().out
    replies = agentsim.open(out).moves().query("agent == 0").sort_values("t")["action"].tolist()
    assert printed.count("[assistant]") == 2  # rounds 1 and 2, before round 3's question
    for earlier in replies[:2]:
        assert f"[assistant]\n{earlier}" in printed.replace(".\n", "\n")


def test_score_says_how_many_moves_were_fallbacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fallback is part of the round as played, so of its score; `score` says so beside it."""
    run("public_goods", tmp_path / "pg", "--set", "max_rounds=2", "--set", "max_reasks=0",
        "--set", "standin.invalid_rate=0.5")
    capsys.readouterr()
    assert main(["score", str(tmp_path / "pg")]) == 0
    printed = capsys.readouterr().out
    fallbacks = int(agentsim.open(tmp_path / "pg").moves()["fallback"].sum())
    assert fallbacks > 0 and f"{fallbacks} moves were fallbacks" in printed
    header, row = (tmp_path / "pg" / "score.csv").read_text().splitlines()[:2]
    assert header.endswith(",fallbacks") and row.endswith(f",{fallbacks}")
