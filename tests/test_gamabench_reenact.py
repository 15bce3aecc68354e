"""`python -m agentsim reenact`: imported GAMA-Bench runs played again in agentsim's games,
GAMA-Bench-exact, and compared reply by reply with the files. The files here are small ones
written by hand in GAMA-Bench's raw_results format, their conversations as its runner builds
them with the tests' own checkout (tests/gamabench_checkout.py): for an OpenAI-style model
(the requests not kept), a Gemini model (every request kept, one asked twice) and the Pirate
Game; and one file changed where agentsim must see it."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import pytest
from gamabench_checkout import write_checkout
from helpers import cli

from agentsim.games.gamabench.importer import import_runs
from agentsim.games.gamabench.reenact import reenact

DESCRIPTION = "\n\n2 players, 2 rounds: pick from 0 to 100; nearest 2/3 of the mean wins."


def request(round_: int) -> str:
    return f'Round {round_} begins. Aim for 2/3 of the mean.\n\nJSON: {{"chosen_number": "0..100"}}'


def report(round_: int, mean: int, winner: int, mine: int) -> list[str]:
    target = f"{mean * (2 / 3):.2f}"
    return [f"Round {round_}: mean {mean}, target (2/3) {target}, winner {winner}.\nYours:",
            json.dumps({"chosen_number": str(mine)}), "Won." if mine == winner else "Lost."]


PICKS = [[30, 60], [20, 40]]  # by round, by player: the means 45 and 30, the winners 30 and 20
MEANS = [45, 30]


def guessing(model: str, gemini: bool, asked: dict[tuple[int, int], int] | None = None) -> dict[str, Any]:
    """Two players, two rounds; `asked[(player, round)]` the times the runner sent the request."""
    asked = asked or {}
    records = [{"responses": list(reversed(picks)),  # the runner shuffles them before it saves
                "mean": mean, "mean_ratio": mean * (2 / 3), "winner": min(picks), "winner_num": 1}
               for picks, mean in zip(PICKS, MEANS)]
    players = []
    for player in range(2):
        if gemini:
            prompt: list[dict[str, Any]] = [{"role": "user", "parts": [DESCRIPTION]}]
            for round_ in (1, 2):
                parts = report(round_, MEANS[round_ - 1], min(PICKS[round_ - 1]), PICKS[round_ - 1][player])
                prompt[-1]["parts"] += [request(round_)] * asked.get((player, round_), 1) + [parts[0]]
                prompt += [{"role": "model", "parts": [parts[1]]}, {"role": "user", "parts": [parts[2]]}]
        else:
            prompt = [{"role": "system", "content": DESCRIPTION}]
            for round_ in (1, 2):
                parts = report(round_, MEANS[round_ - 1], min(PICKS[round_ - 1]), PICKS[round_ - 1][player])
                prompt += [{"role": role, "content": text} for role, text in zip(("user", "assistant", "user"), parts)]
        players.append({"model": model, "id": f"player_{player}", "prompt": prompt,
                        "records": [PICKS[0][player], PICKS[1][player]], "utility": []})
    return {"meta": {"name_exp": "guessing_game", "player_num": 2, "min": 0, "max": 100, "ratio": 2 / 3,
                     "ratio_str": "2/3", "round_id": 2, "version": "v1", "models": model},
            "round_records": records, "player_data": players}


def pirates() -> dict[str, Any]:
    """Three pirates: the first plan fails (1 of 3 for it), the second passes (1 of 2)."""
    first, second = "{'1-th': 98, '2-th': 0, '3-th': 2}", "{'2-th': '100', '3-th': '0'}"

    def told(round_: int, rank: str, plan: str, accepted: int, aboard: int, mine: str, result: str) -> list[dict[str, str]]:
        majority = "At least" if accepted / aboard >= 0.5 else "Less"
        return [{"role": "user", "content": f"The {rank} pirate proposed {plan}; {accepted} of {aboard} for.\nYours:"},
                {"role": "assistant", "content": json.dumps({"decision": mine})},
                {"role": "user", "content": f"{majority} than half.\n{result}"}]

    players = []
    for index, (votes, results) in enumerate([
            (["accept"], ["Your plan failed: you are out."]),
            (["reject", "accept"], ["The 1-st pirate is out.", "Your plan passed; you get 100."]),
            (["reject", "reject"], ["The 1-st pirate is out.", "The 2-nd plan passed; you get 100."])]):
        prompt = [{"role": "system", "content": f"\n\n3 pirates, 100 coins; you rank {index + 1}."}]
        prompt += told(1, "1-st", first, 1, 3, votes[0], results[0])
        if index:
            prompt += told(2, "2-nd", second, 1, 2, votes[1], results[1])
        players.append({"model": "gpt-4o", "id": f"player_{index}", "prompt": prompt, "records": votes})
    return {"meta": {"name_exp": "pirate_game", "player_num": 3, "gold": 100, "round_id": 2, "version": "v1",
                     "models": "gpt-4o"},
            "round_records": [{"gold_distribution": [98, 0, 2], "responses": ["accept", "reject", "reject"]},
                              {"gold_distribution": [100, 0], "responses": ["accept", "reject"]}],
            "player_data": players}


def write(root: Path, files: dict[str, dict[str, Any]]) -> Path:
    for name, document in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return root


@pytest.fixture
def imported(tmp_path: Path) -> tuple[Path, Path]:
    templates = write_checkout(tmp_path / "GAMABench")
    raw = write(tmp_path / "raw_results", {
        "guessing_game/gpt-4o_guessing_game_v1.json": guessing("gpt-4o", gemini=False),
        "guessing_game/gemini-1.5-pro_guessing_game_v1.json": guessing("gemini-1.5-pro", gemini=True,
                                                                       asked={(1, 1): 2}),
        "pirate_game/gpt-4o_pirate_game_v1.json": pirates(),
    })
    import_runs(raw, tmp_path / "imported")
    return tmp_path / "imported", templates


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "reenact.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_the_files_runs_are_reenacted_reply_by_reply_and_equal(imported: tuple[Path, Path], tmp_path: Path) -> None:
    directory, templates = imported
    results = reenact(directory, templates, tmp_path / "out")
    found = rows(tmp_path / "out")
    assert list(found[0])[:10] == ["run", "game", "revision", "round", "player", "move", "attempts",
                                               "prompt_equal", "choice_equal", "outcome_equal"]
    assert len(found) == 4 + 4 + 5, "every reply: two games of 2 x 2, the pirates' 3 + 2"
    assert all((row["prompt_equal"], row["choice_equal"], row["outcome_equal"]) == ("1", "1", "1") for row in found), \
        [row["differs"] for row in found if row["differs"]]
    gemini = {(row["round"], row["player"]): row["attempts"] for row in found if row["run"].startswith("guessing_game/gemini")}
    assert gemini == {("1", "player_0"): "1", ("1", "player_1"): "2", ("2", "player_0"): "1", ("2", "player_1"): "1"}
    moves = [(row["round"], row["player"], row["move"]) for row in found if row["game"] == "pirate_game"]
    assert moves == [("1", "player_0", "propose"), ("1", "player_1", "vote"), ("1", "player_2", "vote"),
                     ("2", "player_1", "propose"), ("2", "player_2", "vote")]
    assert sum(result.equal for result in results) == 13


def test_a_difference_in_a_file_is_found_and_named(imported: tuple[Path, Path], tmp_path: Path) -> None:
    directory, templates = imported
    raw = tmp_path / "raw_results" / "guessing_game" / "gpt-4o_guessing_game_v1.json"
    document = json.loads(raw.read_text())
    changed = copy.deepcopy(document)
    changed["player_data"][1]["prompt"][3]["content"] = "Won."  # player_1 lost round 1
    changed["round_records"][1]["mean"] = 31
    raw.write_text(json.dumps(changed))
    reenact(directory, templates, tmp_path / "out")
    found = {(row["round"], row["player"]): row for row in rows(tmp_path / "out")
             if row["run"] == "guessing_game/gpt-4o_guessing_game_v1.json"}
    assert found["2", "player_1"]["prompt_equal"] == "0" and "'Lost.' against ...'Won.'" in found["2", "player_1"]["differs"]
    assert found["2", "player_0"]["prompt_equal"] == "1"
    assert all(found["2", player]["outcome_equal"] == "0" for player in ("player_0", "player_1"))
    assert "outcome: mean 30, the file's 31" in found["2", "player_0"]["differs"]
    assert found["1", "player_0"]["outcome_equal"] == "1" and found["1", "player_0"]["choice_equal"] == "1"


def test_the_command_prints_the_shares_and_refuses_a_directory_without_imported_runs(
        imported: tuple[Path, Path], tmp_path: Path) -> None:
    directory, templates = imported
    done = cli("reenact", str(directory), "--templates", str(templates), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "3 runs, 13 replies: prompts 13/13 (100.00%), readings 13/13 (100.00%), outcomes 13/13 (100.00%)" in done.stdout
    assert "  pirate_game: 5 replies" in done.stdout and (tmp_path / "out" / "reenact.csv").is_file()
    (tmp_path / "empty").mkdir()
    refused = cli("reenact", str(tmp_path / "empty"), "--templates", str(templates), "--out", str(tmp_path / "o2"))
    assert refused.returncode == 2 and "no imported GAMA-Bench runs under" in refused.stderr
