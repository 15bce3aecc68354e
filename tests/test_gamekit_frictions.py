"""What a new user of the game layer ran into (docs/games-layer.md), each fixed and held here:
a bug in a game's own code, too few players, a failed start's directory, one mean payoff,
round data and move names in the DataFrames, round numbering, the re-ask text, the log line,
the number reader, figures that say what they show, and the payoff line of an unpaid player."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers import cli

import agentsim
from agentsim.errors import ParameterError
from agentsim.gamekit import Number, Options
from agentsim.scenario_files import load_scenario

# A one-file game as a user writes it: the minimum-effort game in groups of 5.
MIN_EFFORT = '''
"""Minimum effort (Van Huyck et al. 1990), groups of 5."""
from dataclasses import dataclass

from agentsim.gamekit import Game, GameParams, Number


@dataclass(frozen=True, kw_only=True)
class MinEffortParams(GameParams):
    agents: int = 10
    group_size: int = 5
    max_rounds: int = 3
    max_effort: int = 7


class MinEffort(Game[MinEffortParams]):
    name = "min_effort_test"
    Params = MinEffortParams
    rules = "You are {player}. Pick an effort from 1 to {max_effort}; you earn 60 + 20 x the group's lowest - 10 x yours."
    question = "Round {round} of {rounds}: which effort do you pick?"

    def choice(self, player):
        return Number(1, self.params.max_effort)

    def outcome(self, round):
        low = min(round.choices.values())
        for player, effort in round.choices.items():
            round.pay(player, 60 + 20 * low - 10 * effort)
        round.tell(None, f"The lowest effort in your group was {low}.")
        round.record(minimum=low)


scenario = MinEffort()
'''


def _game_file(tmp_path: Path, source: str = MIN_EFFORT, name: str = "min_effort.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def _runs(out: Path) -> list[tuple[int, str, str]]:
    connection = sqlite3.connect(out / "agentsim.db")
    try:
        return connection.execute("SELECT run, status, stop_reason FROM runs ORDER BY run").fetchall()
    finally:
        connection.close()


# --- 8: a bug in the game's own code -------------------------------------------------------------
@pytest.mark.parametrize(("broken", "hook"), [
    ("low = min(round.choices.values())", "low = min(round.choices.values()) + undefined_name"),
    ("        round.record(minimum=low)\n",
     "        round.record(minimum=low)\n\n    def score(self, rounds):\n        return rounds[99]\n"),
    ("        round.record(minimum=low)\n",
     "        round.record(minimum=low)\n\n    def standin_choice(self, ask, rng):\n        return ask.choice.nope\n"),
])
def test_a_bug_in_the_game_code_fails_the_run_in_one_line_naming_the_file_line(tmp_path: Path, broken: str,
                                                                                 hook: str) -> None:
    path = _game_file(tmp_path, MIN_EFFORT.replace(broken, hook))
    out = tmp_path / "out"
    done = cli(str(path), "--out", str(out), "--runs", "2", "--no-live", "--log-format", "json", timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    line = next(text for text in (done.stdout + done.stderr).splitlines() if "\"experiment_ended\"" in text)
    ended = json.loads(line)
    assert ended["exit_code"] == 2 and ended["outcome"] == "user_error"
    wrong = "NameError" if "undefined_name" in hook else "AttributeError" if "nope" in hook else "IndexError"
    assert wrong in ended["message"] and f"{path}, line " in ended["message"]
    assert "fix the game file" in ended["message"]
    runs = _runs(out)
    assert runs and all(status == "failed" and reason == "user_error" for _run, status, reason in runs)
    recorded = [row for row in (out / "runs.csv").read_text().splitlines()[1:] if row]
    assert len(recorded) == len(runs)  # the failed runs are in runs.csv, with their one line
    assert wrong in (out / "runs.csv").read_text()


def test_an_error_inside_agentsim_is_still_agentsims() -> None:
    """An exception whose traceback never passes through a game file is agentsim's (exit 1)."""
    from agentsim.gamekit.guard import game_code
    from agentsim.games.gamekit.recorded import RecordedGame

    with pytest.raises(ZeroDivisionError), game_code(RecordedGame(), "in round 1"):
        json.loads("[1, 0]")[0] / json.loads("[1, 0]")[1]


# --- 9: too few players --------------------------------------------------------------------------
def test_too_few_players_are_refused_before_anything_runs(tmp_path: Path) -> None:
    path = _game_file(tmp_path)
    out = tmp_path / "one"
    done = cli(str(path), "--set", "agents=1", "--set", "group_size=0", "--out", str(out), "--no-live")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("agentsim: error: agents must be >= min_players")
    assert not (out / "agentsim.db").exists()
    scenario, _module = load_scenario(path)
    with pytest.raises(ParameterError, match="group_size must be 0"):  # groups too small to play a round
        scenario.with_params(group_size=1)


# --- 10: a failed start leaves a directory a fresh start may use ---------------------------------
def test_a_directory_whose_runs_recorded_nothing_is_started_afresh(tmp_path: Path) -> None:
    typo = _game_file(tmp_path, MIN_EFFORT.replace("which effort do you pick?", "which effort (1 to {max_efort})?"),
                      "typo.py")
    out = tmp_path / "out"
    failed = cli(str(typo), "--out", str(out), "--no-live")
    assert failed.returncode == 2 and "{max_efort}" in failed.stderr
    assert _runs(out) == [(1, "failed", "user_error")]
    fixed = _game_file(tmp_path)
    again = cli(str(fixed), "--out", str(out), "--no-live")
    assert again.returncode == 0, again.stderr
    assert _runs(out) == [(1, "done", "max_rounds")]
    refused = cli(str(fixed), "--out", str(out), "--no-live")  # now it holds results: never overwritten
    assert refused.returncode == 2 and "already holds results" in refused.stderr


def test_the_api_runs_a_game_to_results(tmp_path: Path) -> None:
    results = agentsim.run(str(_game_file(tmp_path)), out=tmp_path / "api", runs=1)
    assert len(results.rounds()) == 3


# --- 1, 2: one mean payoff -----------------------------------------------------------------------
BEAUTY = '''
"""A beauty contest where the guess farthest from 2/3 of the mean leaves each round."""
from dataclasses import dataclass

from agentsim.gamekit import Game, GameParams, Number


@dataclass(frozen=True, kw_only=True)
class BeautyParams(GameParams):
    agents: int = 6
    max_rounds: int = 10


class Beauty(Game[BeautyParams]):
    name = "beauty_test"
    Params = BeautyParams
    rules = "You are {player}. Guess from 0 to 100; the closest to 2/3 of the mean wins 10, the farthest leaves."

    def choice(self, player):
        return Number(0, 100)

    def outcome(self, table):
        guesses = table.choices
        target = 2 / 3 * sum(guesses.values()) / len(guesses)
        ranked = sorted(guesses, key=lambda p: (abs(guesses[p] - target), p.index))
        table.pay(ranked[0], 10)
        table.win(ranked[0])
        table.eliminate(ranked[-1], "farthest")
        table.record(target=target, winner=ranked[0].index)


scenario = Beauty()
'''


def _report_csv(results: agentsim.Results, name: str) -> list[dict[str, str]]:
    import csv

    with (results.report().parent / name).open(encoding="utf-8") as file:
        return list(csv.DictReader(file))


def test_one_mean_payoff_per_player_round_chosen_everywhere(tmp_path: Path) -> None:
    """An elimination game with fallbacks: the runs' mean payoff, the store's by-model table and
    the game's by-model table agree, per player-round in which the player chose."""
    out = tmp_path / "beauty"
    results = agentsim.run(str(_game_file(tmp_path, BEAUTY, "beauty.py")), out=out, runs=2,
                           overrides={"max_reasks": "0", "standin.invalid_rate": "0.3"})
    runs = results.runs()
    moves = results.moves()
    assert moves["fallback"].any() and len(moves) < 2 * 6 * 5  # fallbacks, and eliminated players ask nothing
    for run, played in moves.groupby("run"):
        chosen = played[~played["fallback"]]
        expected = chosen["payoff"].sum() / len(chosen)
        assert float(runs.loc[runs["run"] == run, "mean_payoff"].iloc[0]) == pytest.approx(expected)
    chosen = moves[~moves["fallback"]]
    overall = chosen["payoff"].sum() / len(chosen)
    assert float(results.by_model()["mean_payoff"].iloc[0]) == pytest.approx(overall, abs=1e-5)
    table = _report_csv(results, "gamekit_beauty_test_by_model.csv")
    assert float(table[0]["mean_payoff"]) == pytest.approx(overall, abs=1e-4)


# --- 3: what a round recorded, as columns ---------------------------------------------------------
def test_round_data_are_columns_of_rounds(tmp_path: Path) -> None:
    one = agentsim.run(str(_game_file(tmp_path, BEAUTY, "beauty.py")), out=tmp_path / "b", runs=1)
    rounds = one.rounds()
    assert {"data.target", "data.winner"} <= set(rounds.columns)
    lines = [json.loads(text) for (text,) in one.store.rows("SELECT stats FROM rounds ORDER BY round")]
    assert rounds["data.target"].tolist() == pytest.approx([line["groups"][0]["data"]["target"] for line in lines])
    groups = agentsim.run(str(_game_file(tmp_path)), out=tmp_path / "m", runs=1).rounds()
    assert {"data.1.minimum", "data.2.minimum"} <= set(groups.columns)  # two groups of 5: by table


# --- 4: move names -------------------------------------------------------------------------------
GIVE_PUNISH = '''
from dataclasses import dataclass

from agentsim.gamekit import Game, GameParams, Number


@dataclass(frozen=True, kw_only=True)
class Params(GameParams):
    agents: int = 4
    group_size: int = 2
    max_rounds: int = 3


class GivePunish(Game[Params]):
    name = "give_punish_test"
    Params = Params
    rules = "You are {player}, in pairs."

    async def play_round(self, round):
        dictator, recipient = round.players
        gift = await round.ask(dictator, Number(0, 10), "How many of 10 do you give?", move="give")
        spent = await round.ask(recipient, Number(0, 5), "You got {gift}. Punish with how many?", move="punish",
                                gift=gift)
        round.pay(dictator, 10 - gift - 3 * spent)
        round.pay(recipient, gift - spent)
        round.record(gift=gift, punished=spent)

    def standin_choice(self, ask, rng):
        return rng.randint(6, 10) if ask.move == "give" else rng.randint(0, 2)


scenario = GivePunish()
'''


def test_moves_name_their_move_and_choices_are_counted_per_move(tmp_path: Path) -> None:
    results = agentsim.run(str(_game_file(tmp_path, GIVE_PUNISH, "give_punish.py")), out=tmp_path / "gp", runs=1,
                           overrides={"standin.invalid_rate": "0"})
    moves = results.moves()
    assert moves["move"].value_counts().to_dict() == {"give": 6, "punish": 6}
    assert moves.loc[moves["move"] == "give", "action"].astype(int).between(6, 10).all()
    assert moves.loc[moves["move"] == "punish", "action"].astype(int).between(0, 2).all()
    rows = _report_csv(results, "gamekit_give_punish_test_choices.csv")
    for move, low, high in (("give", 6, 10), ("punish", 0, 2)):
        counted = [row for row in rows if row["move"] == move and row["model"] == "all"]
        assert sum(int(row["count"]) for row in counted) == 6
        assert all(low <= int(row["choice"]) <= high for row in counted)
    summaries = results.runs()
    assert list(json.loads(results.store.connection.execute("SELECT summary FROM runs").fetchone()[0])
                ["mean_choice"]) == ["give", "punish"]
    assert {"mean_choice.give", "mean_choice.punish"} <= set(summaries.columns)


# --- 16: figures that say what they show ---------------------------------------------------------
def test_figures_name_their_game_and_count_what_each_point_rests_on(tmp_path: Path) -> None:
    results = agentsim.run(str(_game_file(tmp_path, BEAUTY, "beauty.py")), out=tmp_path / "b", runs=1)
    folder = results.report().parent
    assert (folder / "gamekit_beauty_test_rounds.png").is_file()
    rows = _report_csv(results, "gamekit_beauty_test_rounds.csv")
    counts = [int(row["n"]) for row in rows if row["move"] == "choose" and row["measure"] == "mean"]
    assert counts[0] > counts[-1] >= 1  # fewer guesses as players leave
    players = _report_csv(results, "gamekit_beauty_test_players.csv")
    assert len(players) == 6 and sum(not row["left_in_round"] for row in players) == 1  # one survivor
    assert sum(int(row["wins"]) for row in players) == len(counts)
    html = (folder / "report.html").read_text()
    assert "beauty_test: each player" in html


# --- 5: one round numbering ----------------------------------------------------------------------
def test_a_layer_game_counts_its_rounds_from_1_everywhere(tmp_path: Path) -> None:
    import io

    from agentsim.analysis.transcript import write_transcript

    out = tmp_path / "m"
    results = agentsim.run(str(_game_file(tmp_path)), out=out, runs=1)
    assert sorted(results.moves()["round"].unique()) == [1, 2, 3]
    assert results.rounds()["round"].tolist() == [1, 2, 3]
    for number in (1, 3):
        text = io.StringIO()
        write_transcript(out, text, run=1, agent=0, round_=number)
        assert f"Round {number} of 3" in text.getvalue() and f"· round {number} ·" in text.getvalue()
        assert f"Round {number + 1} of 3" not in text.getvalue()


# --- 6, 12: the number reader and the re-ask text ------------------------------------------------
def test_the_reader_takes_the_number_the_reply_commits_to() -> None:
    effort = Number(1, 7)
    assert effort.read("My effort: 3 out of 7") == ("3", None)
    assert effort.read("I pick 3, not 5") == ("3", None)
    assert effort.read("Effort 4/7") == ("4", None)
    assert effort.read("Effort: 5/7. Final.") == ("5", None)
    assert effort.read("I choose 4 of the 7") == ("4", None)
    assert effort.read("Rather than 6, I pick 2.") == ("2", None)
    assert effort.read("2 out of 7, or maybe 3") == ("3", None)  # still the number it ends with
    assert effort.read("Between 3 and 5, say.")[0] is None  # still unusable: no commitment
    volunteer = Options("volunteer", "abstain")
    assert volunteer.read("I will not volunteer")[0] is None
    assert "only after a negation" in str(volunteer.read("I will not volunteer")[1])
    assert volunteer.read("I won't volunteer; I abstain.") == ("abstain", None)
    assert volunteer.read("I do not want to volunteer")[0] is None
    assert volunteer.read("No, I volunteer.") == ("volunteer", None)
    assert volunteer.read("Not sure, but I volunteer.") == ("volunteer", None)


@pytest.mark.parametrize(("choice", "reply", "said"), [
    (Number(1, 7), "99", "Your reply could not be used: 99 is not from 1 to 7."),
    (Number(1, 7), "none", "Your reply could not be used: it names no number."),
    (Options("go", "stay"), "go or stay", "Your reply could not be used: it names several options: go, stay."),
])
def test_the_reask_text_is_a_sentence(choice: Any, reply: str, said: str) -> None:
    from agentsim.codec import Parsed
    from agentsim.gamekit import Ask, KitCodec

    ask = Ask("g", "choose", 1, "Player 1", choice, "", "Round 1.")
    action, problem = choice.read(reply)
    assert action is None
    assert KitCodec().reminder(ask, Parsed(None, problem)).startswith(said)


# --- 7: the log line says which round its figures are ----------------------------------------------
def test_the_run_ended_line_says_its_figures_are_the_last_rounds(tmp_path: Path) -> None:
    done = cli(str(_game_file(tmp_path)), "--out", str(tmp_path / "m"), "--no-live", "--set", "max_reasks=0",
               "--set", "standin.invalid_rate=0.5", "--log-format", "json", timeout=120)
    assert done.returncode == 0, done.stderr
    ended = json.loads(next(text for text in (done.stdout + done.stderr).splitlines() if '"run_ended"' in text))
    assert ended["fallbacks"] > 0
    assert ended["choices"].endswith(" in round 3")  # the last round's fallbacks, not the run's
    assert ended["mean_choice"].endswith(" in round 3") and ended["mean_payoff"].endswith(" in round 3")  # (log keys: no spaces)


# --- 11: the stand-in's settings say why ---------------------------------------------------------
def test_an_impossible_invalid_rate_says_why(tmp_path: Path) -> None:
    done = cli(str(_game_file(tmp_path)), "--out", str(tmp_path / "m"), "--no-live", "--set", "standin.invalid_rate=1")
    assert done.returncode == 2
    assert "first attempt would ever be read" in done.stderr


# --- 13: invalid replies are not errors ----------------------------------------------------------
def test_the_usage_table_counts_invalid_replies_apart_from_errors(tmp_path: Path) -> None:
    results = agentsim.run(str(_game_file(tmp_path)), out=tmp_path / "m", runs=1,
                           overrides={"standin.invalid_rate": "0.5"})
    (summary,) = results.summary()["runs"]
    assert summary["invalid_replies"] > 0 and summary["errors"] == {}
    (row,) = _report_csv(results, "table_usage.csv")
    assert int(row["invalid_replies"]) == summary["invalid_replies"] and int(row["errors"]) == 0


# --- 17, 18: the payoff line of an unpaid player; a fallback in the transcript ------------------------
def test_an_unpaid_player_reads_that_it_earned_nothing(tmp_path: Path) -> None:
    import io

    from agentsim.analysis.transcript import write_transcript

    out = tmp_path / "b"
    results = agentsim.run(str(_game_file(tmp_path, BEAUTY, "beauty.py")), out=out, runs=1,
                           overrides={"standin.invalid_rate": "0.5", "max_reasks": "0"})
    prompts = results.decisions(prompts=True)["prompt"].dropna()
    later = [prompt for prompt in prompts if "Your earlier rounds" in prompt]
    assert later and all("Round 1: " in prompt for prompt in later[:5])
    assert any("Your payoff: 0." in prompt for prompt in later)  # only the round's winner is paid
    text = io.StringIO()
    write_transcript(out, text, run=1)
    assert "(a fallback: no reply gave it" in text.getvalue()


# --- 18: smaller ones ----------------------------------------------------------------------------
def test_opening_a_folder_of_results_folders_names_them(tmp_path: Path) -> None:
    from agentsim.errors import UserError

    agentsim.run(str(_game_file(tmp_path)), out=tmp_path / "all" / "one", runs=1)
    with pytest.raises(UserError, match=r"holds no agentsim.db of its own but 1 results folder\(s\): .*one"):
        agentsim.open(tmp_path / "all")


def test_decisions_give_each_calls_messages_as_a_list(tmp_path: Path) -> None:
    results = agentsim.run(str(_game_file(tmp_path)), out=tmp_path / "m", runs=1)
    calls = results.decisions(prompts=True).dropna(subset=["reply"])
    for messages, prompt in zip(calls["messages"], calls["prompt"], strict=True):
        assert [each["role"] for each in messages][:2] == ["system", "user"]
        assert prompt == "\n\n".join(f"[{each['role']}] {each['content']}" for each in messages)


def test_the_help_says_how_to_mix_stand_ins() -> None:
    from helpers import cli_in_process

    done = cli_in_process("--help")
    assert "stand-in:a=5,stand-in:b=5" in "".join(done.stdout.split())  # (argparse wraps at hyphens)


def test_an_error_from_the_engine_under_a_games_ask_is_agentsims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sequential game awaits its asks in its own file; an exception from the engine below
    them (not the layer's verbs) is agentsim's, not the game's."""
    from agentsim.agents import PopulationAgent

    async def broken(*_arguments: Any, **_options: Any) -> Any:
        raise RuntimeError("the engine broke")

    monkeypatch.setattr(PopulationAgent, "astep", broken)  # below agentsim/agents.py's ask_together
    scenario, _module = load_scenario(_game_file(tmp_path, GIVE_PUNISH, "give_punish.py"))
    with pytest.raises(RuntimeError, match="the engine broke"):
        agentsim.run(scenario, out=tmp_path / "gp", runs=1)
