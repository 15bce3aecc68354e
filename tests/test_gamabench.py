"""GAMA-Bench: its published runs' format read into the store, its scores, its prompt
templates. The raw_results files here are small ones written in its format (its data is never
vendored); each expected score is worked out by hand in the comment beside it."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

import agentsim
from agentsim.cli import main
from agentsim.errors import UserError
from agentsim.games.gamabench.rules import PARAMETERS, payoffs
from agentsim.games.gamabench.scoring import equilibrium_plan, score
from agentsim.games.gamabench.templates import load_templates, parse_template


def raw(game: str, meta: dict[str, Any], records: list[dict[str, Any]], *, players: list[list[Any]] | None = None,
        model: str = "toy-model") -> dict[str, Any]:
    """A file in raw_results' shape: `meta`, `round_records`, `player_data`."""
    count = meta["player_num"]
    return {"meta": {"name_exp": game, "round_id": len(records), "version": "v1"} | meta,
            "round_records": records,
            "player_data": [{"model": model, "id": f"player_{index}", "prompt": [],
                             "records": players[index] if players else [], "utility": []} for index in range(count)]}


GUESSING = raw("guessing_game", {"player_num": 3, "min": 0, "max": 100, "ratio": 2 / 3, "ratio_str": "2/3"}, [
    {"responses": [30, 40, 20], "mean": 30, "mean_ratio": 20, "winner": 20, "winner_num": 1},
    {"responses": [10, 30, 20], "mean": 20, "mean_ratio": 13.33, "winner": 10, "winner_num": 1},
], players=[[40, 10], [30, 30], [20, 20]])  # the responses shuffled, as GAMA-Bench saves them
# S = mean(30, 20) = 25 -> (100 - 25) / 100 = 75
BAR = raw("bar_game", {"player_num": 4, "min": 0, "max": 10, "home": 5, "ratio": 0.5, "ratio_str": "50%",
                       "mode": "implicit"}, [
    {"responses": ["go", "go", "go", "stay"], "go_num": 3, "go_ratio": 0.75, "winner": "stay", "utility": 0},
    {"responses": ["go", "stay", "go", "stay"], "go_num": 2, "go_ratio": 0.5, "winner": "go", "utility": 10},
])  # S = (0.25 + 0) / 2 = 0.125, R = 0.5 -> 75
DOLLAR = raw("divide_dollar", {"player_num": 4, "golds": 100}, [
    {"responses": [30, 30, 30, 30], "total_proposal": 120}, {"responses": [25, 25, 25, 25], "total_proposal": 100},
])  # G = 25, S = (|30 - 25| + 0) / 2 = 2.5 -> 90
GOODS = raw("public_goods", {"player_num": 4, "tokens": 20, "ratio": 2, "token_initialization": "fixed",
                             "reset": True, "rand_min": 11}, [
    {"responses": [10, 10, 10, 10], "total_tokens": 40}, {"responses": [0, 0, 0, 0], "total_tokens": 0},
])  # S = (10 + 0) / 2 = 5 -> (20 - 5) / 20 = 75
DINER = raw("diner_dilemma", {"player_num": 4, "cheap_cost": 10, "cheap_utility": 15, "exp_cost": 20,
                              "exp_utility": 20}, [
    {"responses": ["cheap", "costly", "costly", "costly"], "cheap_player": 1, "total_cost": 70, "avg_cost": 17.5},
    {"responses": ["cheap", "cheap", "cheap", "costly"], "cheap_player": 3, "total_cost": 50, "avg_cost": 12.5},
])  # costly shares 0.75 and 0.25 -> 50
AUCTION = raw("sealed_bid_auction", {"player_num": 2, "valuation_min": 0, "valuation_max": 200, "interval": 10,
                                     "seed": 42, "mode": "highest bid"}, [
    {"responses": [50, 10], "bid_winner": "player_0", "bid_winner_proposed": 50, "bid_winner_payment": 50,
     "utility": [50, 0], "valuations": [100, 0]},
    {"responses": [200, 50], "bid_winner": "player_0", "bid_winner_proposed": 200, "bid_winner_payment": 200,
     "utility": [0, 0], "valuations": [200, 100]},
])  # kept shares (0.5, 0 [a value of 0 counts as 1; below 0 is 0]) and (0, 0.5) -> 25
BATTLE = raw("battle_royale", {"player_num": 3, "base_hit_rate": 35, "interval": 5}, [
    {"responses": ["2"], "player_shooting": "0", "shot_player": "2", "action": "shoot", "out": True},
    {"responses": ["0"], "player_shooting": "1", "shot_player": "0", "action": "shoot", "out": False},
    {"responses": ["null"], "player_shooting": "0", "shot_player": "null", "action": "miss", "out": False},
])  # aims at the strongest other player left in rounds 1 (player 2) and 2 (player 0, 2 being out) -> 2 / 3
PIRATE = raw("pirate_game", {"player_num": 3, "gold": 100}, [
    {"gold_distribution": [50, 25, 25], "responses": ["accept", "accept", "reject"]},
])  # L1 from [99, 0, 1] = 49 + 25 + 24 = 98; votes: 25 -> accept (right), 25 -> reject (wrong): 1 / 2
# -> (200 - 98) / 200 * 50 + 0.5 * 50 = 50.5
EXPECTED = {"guessing_game": 75.0, "bar_game_implicit": 75.0, "divide_dollar": 90.0, "public_goods": 75.0,
            "diner_dilemma": 50.0, "sealed_bid_auction_first_price": 25.0, "battle_royale": 200 / 3,
            "pirate_game": 50.5}
FILES = {"guessing_game": GUESSING, "bar_game_implicit": BAR, "divide_dollar": DOLLAR, "public_goods": GOODS,
         "diner_dilemma": DINER, "sealed_bid_auction": AUCTION, "battle_royale": BATTLE, "pirate_game": PIRATE}


def write_raw(root: Path, *, runs: int = 1, model: str = "toy-model") -> Path:
    for game, document in FILES.items():
        folder = root / game
        folder.mkdir(parents=True, exist_ok=True)
        for number in range(1, runs + 1):
            (folder / f"{model}_{game}_v1_{number}.json").write_text(json.dumps(document))
    return root


def test_import_then_score_gives_the_hand_computed_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_raw(tmp_path / "raw_results", runs=2)
    (source / "guessing_game" / "toy-model_guessing_game_v1_cot1.json").write_text(json.dumps(GUESSING))
    assert main(["import", "gamabench", str(source), "--out", str(tmp_path / "imported")]) == 0
    assert main(["score", str(tmp_path / "imported")]) == 0
    printed = capsys.readouterr().out
    with (tmp_path / "imported" / "score.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["model", "game", "version", "condition", "runs", "score", "std", "fallbacks"]
    assert {row["fallbacks"] for row in rows} == {"0"}  # GAMA-Bench re-asked until a reply read: none
    default = {row["game"]: row for row in rows if row["condition"] == ""}
    assert set(default) == set(EXPECTED)
    for game, expected in EXPECTED.items():
        row = default[game]
        assert (row["model"], row["version"], row["runs"]) == ("toy-model", "v1", "2")
        assert float(row["score"]) == pytest.approx(expected, abs=1e-3), game
    assert [(row["condition"], row["runs"]) for row in rows if row["condition"]] == [("cot1", "1")]
    assert "toy-model" in printed and "pirate_game" in printed


def test_imported_runs_read_as_agentsim_runs(tmp_path: Path) -> None:
    source = write_raw(tmp_path / "raw_results")
    main(["import", "gamabench", str(source), "--out", str(tmp_path / "out")])
    with agentsim.open(tmp_path / "out" / "guessing_game" / "toy-model" / "v1") as results:
        assert results.experiment["imported"]["files"] == ["guessing_game/toy-model_guessing_game_v1_1.json"]
        moves = results.moves()
        # each player's own choice (player_data), not the shuffled responses; the winner (20, then 10) paid 1
        assert moves.groupby("agent")["action"].apply(list).to_dict() == {0: ["40", "10"], 1: ["30", "30"],
                                                                         2: ["20", "20"]}
        assert moves["payoff"].tolist() == [0, 0, 1, 1, 0, 0]
        assert set(moves["model"]) == {"toy-model"}
        assert results.rounds()["mean"].tolist() == [30, 20]
    with agentsim.open(tmp_path / "out" / "pirate_game" / "toy-model" / "v1") as results:
        moves = results.moves()  # the proposal passed (2 of 3): each pirate gets its share
        assert moves["action"].tolist() == ["[50, 25, 25]", "accept", "reject"]
        assert moves["payoff"].tolist() == [50, 25, 25]
    report = agentsim.open(tmp_path / "out" / "divide_dollar" / "toy-model" / "v1").report(tmp_path / "report")
    assert "GAMA-Bench" in report.read_text()


@pytest.mark.parametrize(("content", "message"), [
    (b"{not json", "not JSON"),
    (json.dumps({"meta": {"version": "v1", "player_num": 3}}).encode(), "missing 'round_records'"),
    (json.dumps(GUESSING | {"round_records": [{"responses": [1, 2, 3]}]}).encode(), "none of the eight games"),
    (json.dumps(GUESSING | {"round_records": [{"responses": [1, 2, 3], "mean_ratio": 2}]}).encode(), "missing 'mean'"),
    (json.dumps(GUESSING | {"meta": GUESSING["meta"] | {"player_num": "ten"}}).encode(), "player_num"),
    (json.dumps([1, 2]).encode(), "not a GAMA-Bench run"),
])
def test_a_malformed_file_is_refused_in_one_line_and_nothing_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str) -> None:
    source = write_raw(tmp_path / "raw_results")
    (source / "guessing_game" / "broken_guessing_game_v1_1.json").write_bytes(content)
    assert main(["import", "gamabench", str(source), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error and "broken_guessing_game_v1_1.json" in error, error
    assert not (tmp_path / "out").exists()


def test_importing_twice_into_one_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_raw(tmp_path / "raw_results")
    assert main(["import", "gamabench", str(source), "--out", str(tmp_path / "out")]) == 0
    assert main(["import", "gamabench", str(source), "--out", str(tmp_path / "out")]) == 2
    assert "already holds runs" in capsys.readouterr().err


def test_score_of_a_directory_without_gamabench_runs_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path)]) == 2
    assert "no GAMA-Bench runs" in capsys.readouterr().err


def test_scores_follow_the_revised_formulas() -> None:
    guess = PARAMETERS["guessing_game"]
    assert score("guessing_game", guess, [{"mean": 0}]) == 100  # everyone at 0, the equilibrium
    assert score("guessing_game", guess | {"ratio": 1}, [{"mean": 50}]) == 100  # ratio 1: the midpoint
    assert score("divide_dollar", PARAMETERS["divide_dollar"], [{"total_proposal": 1000}]) == 0  # never below 0
    assert score("public_goods", PARAMETERS["public_goods"], [{"total_tokens": 0}]) == 100  # free riding, rational
    assert equilibrium_plan(5) == [98, 0, 1, 0, 1]
    perfect = [{"gold_distribution": equilibrium_plan(5), "responses": ["accept", "reject", "accept", "reject", "accept"]}]
    assert score("pirate_game", PARAMETERS["pirate_game"] | {"player_num": 5}, perfect) == 100


def test_payoffs_follow_each_games_rules() -> None:
    bar = PARAMETERS["bar_game"]
    assert payoffs("bar_game", {"responses": ["go", "stay"], "winner": "go"}, bar) == [10, 5]
    goods = PARAMETERS["public_goods"] | {"player_num": 2}
    assert payoffs("public_goods", {"responses": [20, 0], "total_tokens": 20}, goods) == [20, 40]
    diner = PARAMETERS["diner_dilemma"] | {"player_num": 2}
    assert payoffs("diner_dilemma", {"responses": ["cheap", "costly"], "avg_cost": 15}, diner) == [0, 5]


def test_prompt_templates_in_gamabench_format(tmp_path: Path) -> None:
    folder = tmp_path / "prompt_template" / "divide_dollar"
    folder.mkdir(parents=True)
    for version in ("v1", "v2"):
        (folder / f"description_{version}.txt").write_text(
            f"Inputs: !<INPUT 0>! players, !<INPUT 1>! gold\n\n<commentblockmarker>###</commentblockmarker>\n\n"
            f"({version}) Share !<INPUT 1>! coins among !<INPUT 0>! people.\n")
        (folder / f"request_{version}.txt").write_text("<commentblockmarker>###</commentblockmarker>\nAsk: !<INPUT 0>!")
        (folder / f"report_{version}.txt").write_text(
            "<commentblockmarker>###</commentblockmarker>\nTotal !<INPUT 0>!.\n<part>///</part>\n"
            "{\"bid_amount\": \"!<INPUT 1>!\"}\n<part>///</part>\nYou got !<INPUT 2>!.")
    templates = load_templates(tmp_path / "prompt_template", "divide_dollar", "v2")
    assert templates["description"].render(10, 100) == ["(v2) Share 100 coins among 10 people."]
    assert templates["report"].render(120, 30, 0) == ["Total 120.", '{"bid_amount": "30"}', "You got 0."]
    with pytest.raises(UserError, match=r"description_v3\.txt"):
        load_templates(tmp_path / "prompt_template", "divide_dollar", "v3")
    with pytest.raises(UserError, match="not a prompt template"):
        parse_template("x.txt", "no marker here")
    with pytest.raises(ValueError, match="uses 3 inputs"):
        templates["report"].render(1)
