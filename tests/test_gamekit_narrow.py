"""The game as a narrow object the engine wraps, and several moves of one player in a round
(issue 43, items 1 and 2).

A game's class holds only what its author writes, so any helper or attribute name the author
picks is the author's (`draw`, `template`); a parameter named like a field the layer fills in
itself (`rounds`) is refused when the class is made, in one line. A game may ask a player again
in the same round: the centipede game as a researcher first writes it (one `play_round` asking
the two players of a pair in turn) runs, reports, and resumes after kill -9 to the same moves;
the store, the DataFrames and `transcript` keep every move in its order; a player that sat a
round out reads no line about it."""

from __future__ import annotations

import io
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, cli, cli_in_process
from test_resume import killed_and_resumed_as_whole

import agentsim
from agentsim.analysis.transcript import write_transcript
from agentsim.errors import ParameterError, UserError
from agentsim.gamekit import Game, GameParams, Options
from agentsim.model import PopulationModel
from agentsim.store import Store


def _file(tmp_path: Path, source: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


# --- item 1: the game is a narrow object ------------------------------------------------------------
def test_the_game_class_shows_an_author_at_most_20_public_names() -> None:
    public = [name for name in dir(Game) if not name.startswith("_")]
    assert len(public) <= 20, public
    assert {"choice", "outcome", "play_round", "feedback", "private", "standin_choice", "score"} <= set(public)
    assert not {"draw", "template", "start", "play", "resolve", "codec", "pairing", "describe"} & set(public)


CARDS = '''
    """A card game whose author wrote a helper `draw` and a `template` text of its own."""
    from dataclasses import dataclass

    from agentsim.gamekit import Game, GameParams, Options


    @dataclass(frozen=True, kw_only=True)
    class CardParams(GameParams):
        agents: int = 4
        max_rounds: int = 3


    class Cards(Game[CardParams]):
        name = "cards"
        Params = CardParams
        template = "Your card is the {card}."   # the author's own text, used below
        rules = "You are {player}, playing {rounds} rounds of high card."
        question = "Round {round}: keep your card or fold?"

        def draw(self, rng):                      # the author's own helper
            return rng.choice(["two", "seven", "queen", "ace"])

        def choice(self, player):
            return Options("keep", "fold")

        def outcome(self, round):
            for player, chosen in round.choices.items():
                card = self.draw(round.random)
                round.tell(player, self.template.format(card=card))
                round.pay(player, 2 if chosen == "keep" and card in ("queen", "ace") else 0)
            round.record(kept=sum(chosen == "keep" for chosen in round.choices.values()))


    scenario = Cards()
'''


def test_a_game_with_a_helper_draw_and_a_template_text_runs(tmp_path: Path) -> None:
    """Before, the scheduler called the author's `draw` as the scenario's hook (a crash), and
    the session read `template.text` off the author's string (an AttributeError)."""
    out = tmp_path / "cards"
    done = cli(str(_file(tmp_path, CARDS, "cards.py")), "--out", str(out), "--no-live", "--runs", "1")
    assert done.returncode == 0, done.stderr
    with agentsim.open(out) as results:
        assert len(results.moves()) == 4 * 3
        prompts = results.decisions(prompts=True)["prompt"].dropna()
    assert prompts.str.contains("You are Player").all()
    assert prompts.str.contains(r"Your card is the (?:two|seven|queen|ace)\.").any()  # the author's template, told
    store = Store(out)
    recorded = store.experiment()["prompt_templates"]
    store.close()
    assert recorded == {"cards": "You are {player}, playing {rounds} rounds of high card.\n---\n"
                                 "Round {round}: keep your card or fold?"}  # the engine's text: rules and question


def test_a_parameter_the_layer_fills_in_is_refused_in_one_line(tmp_path: Path) -> None:
    source = CARDS.replace("        max_rounds: int = 3\n", "        max_rounds: int = 3\n        rounds: int = 20\n")
    out = tmp_path / "refused"
    done = cli(str(_file(tmp_path, source, "rounds.py")), "--out", str(out), "--no-live")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "parameter named 'rounds'" in line and "max_rounds" in line and "rename" in line
    assert not (out / "agentsim.db").exists()


def test_layer_fields_are_refused_as_parameters_ask_fields_and_private_values() -> None:
    with pytest.raises(ParameterError, match="parameter named 'player'"):
        type("Clash", (GameParams,), {"__annotations__": {"player": str}, "player": "me"})

    class Plain(Game[GameParams]):
        name = "plain"

        def choice(self, player: Any) -> Options:
            return Options("a", "b")

        def outcome(self, round: Any) -> None:
            pass

    class AskField(Plain):
        name = "ask_field"

        async def play_round(self, round: Any) -> None:
            await round.ask(round.players[0], Options("a", "b"), "Pick.", score=3)

    class Private(Plain):
        name = "private_value"

        def private(self, player: Any, rng: Any) -> dict[str, Any]:
            return {"round": 7}

    for game, said in ((AskField(agents=2, max_rounds=1), "the field 'score'"),
                       (Private(agents=2, max_rounds=1), "the private value 'round'")):
        with pytest.raises(UserError, match=said):
            agentsim.run(game, runs=1)


def test_a_games_declared_moves_are_checked_when_the_class_is_made_and_when_a_round_asks() -> None:
    with pytest.raises(ParameterError, match=r"Haggle.moves names the moves its rounds ask, each once: a tuple"):
        class Haggle(Game[GameParams]):  # one name, not a tuple of them
            moves = "offer"  # type: ignore[assignment]

    class Offer(Game[GameParams]):
        moves = ("offer",)
        rules = "You are {player}."

        async def play_round(self, round):  # type: ignore[no-untyped-def]
            first, second = round.players[:2]
            await round.ask(first, Options("high", "low"), move="offer")
            await round.ask(second, Options("yes", "no"), move="respond")

    with pytest.raises(UserError, match=r"^Offer asks the move 'respond' in round 1, which its `moves` does not name "
                                        r"\(offer\); add it to `moves`$"):
        PopulationModel(Offer(agents=2, max_rounds=1), seed=0).step()


def test_a_player_is_not_asked_twice_at_once(tmp_path: Path) -> None:
    class Twice(Game[GameParams]):
        name = "twice"

        async def play_round(self, round: Any) -> None:
            first = round.players[0]
            await round.ask_each([first, first], Options("a", "b"), "Pick.")

    with pytest.raises(UserError, match="asks Player 1 twice at once in round 1"):
        agentsim.run(Twice(agents=2, max_rounds=1), out=tmp_path / "t", runs=1)


# --- item 2: several moves of one player in a round ---------------------------------------------------
CENTIPEDE = '''
    from dataclasses import dataclass

    from agentsim.gamekit import Game, GameParams, Options


    @dataclass(frozen=True, kw_only=True)
    class CentipedeParams(GameParams):
        agents: int = 8
        group_size: int = 2
        max_rounds: int = 4
        nodes: int = 6


    class Centipede(Game[CentipedeParams]):
        name = "centipede_test"
        Params = CentipedeParams
        rules = "You are {player}. Two piles, 4 and 1 points, double at every pass; whoever takes gets the large one."
        question = "Round {round}, node {node}: the piles are {large} and {small}. TAKE or PASS?"

        async def play_round(self, round):
            first, second = round.players
            large, small = 4, 1
            for node in range(1, self.params.nodes + 1):
                mover, other = (first, second) if node % 2 else (second, first)
                move = await round.ask(mover, Options("TAKE", "PASS"), node=node, large=large, small=small)
                if move == "TAKE":
                    round.pay(mover, large)
                    round.pay(other, small)
                    round.record(taken_at=node)
                    return
                large, small = 2 * large, 2 * small
            round.pay(first, large)
            round.pay(second, small)
            round.record(taken_at=None)


    scenario = Centipede()
'''


def test_the_centipede_game_asks_the_pair_in_turn_and_keeps_every_move(tmp_path: Path) -> None:
    out = tmp_path / "centipede"
    done = cli(str(_file(tmp_path, CENTIPEDE, "centipede.py")), "--out", str(out), "--no-live", "--runs", "2",
               "--set", "standin.invalid_rate=0.3")
    assert done.returncode == 0, done.stderr
    with agentsim.open(out) as results:
        moves = results.moves()
        rounds = results.rounds()
        by_model = results.by_model()
        summaries = results.runs()
        calls = results.decisions(prompts=True).dropna(subset=["reply"])
    several = 0
    for (run, _t), table in moves.groupby(["run", "t"], sort=False):
        # alternating, in order: node k is asked of the first mover at odd k, of the other at even k
        assert list(table["step"]) == list(range(1, len(table) + 1))
        players = list(table["agent"])
        assert all(players[k] != players[k + 1] for k in range(len(players) - 1))
        assert all(players[k] == players[k + 2] for k in range(len(players) - 2))
        assert (table["action"].iloc[:-1] == "PASS").all()
        assert table["action"].iloc[-1] == "TAKE" or len(table) == 6
        node = len(table) if table["action"].iloc[-1] == "TAKE" else None
        taken = rounds[(rounds["run"] == run)][[c for c in rounds.columns if c.endswith("taken_at")]]
        assert node is None or (taken == node).any(axis=None)
        several += len(table) > 2
        # the round's payoff rides on each player's last move; its earlier moves carry 0
        for _agent, own in table.groupby("agent"):
            assert (own["payoff"].iloc[:-1] == 0).all()
    assert several > 0
    # each decision's prompt is rebuilt from the store alone: the node it was asked at (its step)
    first = calls[calls["context"].fillna("").str.len() > 0]
    for prompt, context in zip(first["prompt"], first["context"], strict=True):
        assert f"node {json.loads(context)['n']}:" in prompt
    assert (first["attempt"] > 0).any()  # a player's later decision continues its count of attempts
    # one mean payoff: the run's summary, the by-model table and the report's agree
    assert summaries["mean_payoff"].notna().all()
    text = io.StringIO()
    write_transcript(out, text, run=1)
    assert "asked again" in text.getvalue() and "node 3" in text.getvalue()
    html = agentsim.open(out).report()
    rows = (html.parent / "gamekit_centipede_test_by_model.csv").read_text().splitlines()
    reported = float(rows[1].split(",")[6])
    assert reported == pytest.approx(float(by_model["mean_payoff"].iloc[0]), abs=1e-3)


def test_transcript_prints_a_rounds_calls_in_the_order_they_were_made(tmp_path: Path) -> None:
    """`transcript --round R` of scenarios/centipede.py: each table's decisions in the order the
    players were asked (the `step` order of `Results.moves()`), not grouped by player; a
    player's later moves in the round marked "asked again"."""
    out = tmp_path / "centipede"
    agentsim.run(str(ROOT / "scenarios" / "centipede.py"), out=out, runs=1, progress=False,
                 overrides={"standin.invalid_rate": 0.3})
    with agentsim.open(out) as results:
        moves = results.moves()
    several = 0
    for round_number in sorted(set(moves["round"])):
        printed = cli_in_process("transcript", str(out), "--round", str(round_number))
        assert printed.returncode == 0, printed.stderr
        headings = re.findall(r"^=== run \d+ \(seed \d+\) · round (\d+) · t (\d+) · agent (\d+) \(.*?\)( · asked again)? ===$",
                              printed.stdout, flags=re.MULTILINE)
        made = moves[moves["round"] == round_number]
        assert [(int(t), int(agent)) for _, t, agent, _ in headings] == list(zip(made["t"], made["agent"], strict=True))
        seen: set[tuple[int, int]] = set()
        for _, t, agent, again in headings:
            assert bool(again) == ((int(t), int(agent)) in seen), (round_number, t, agent)
            seen.add((int(t), int(agent)))
        several += sum(bool(again) for *_, again in headings)
    assert several > 0, "some player was asked again in a round"


def test_the_centipede_game_resumes_after_kill_9_to_the_same_moves(tmp_path: Path) -> None:
    path = str(_file(tmp_path, CENTIPEDE, "centipede.py"))
    settings = [path, "--set", "agents=16", "--set", "max_rounds=60", "--runs", "2", "--seed", "5",
                "--checkpoint-seconds", "0", "--no-live"]
    killed_and_resumed_as_whole(settings, tmp_path, after_rounds=15)


SITTING_OUT = '''
    from agentsim.gamekit import Game, GameParams, Number


    class TakeTurns(Game[GameParams]):
        """Two players; each round one of them, in turn, picks a number (the other sits out)."""
        name = "take_turns"
        rules = "You are {player}."

        async def play_round(self, round):
            mover = round.players[(round.number - 1) % 2]
            picked = await round.ask(mover, Number(0, 9), "Round {round}: pick a number from 0 to 9.")
            round.pay(mover, picked)


    scenario = TakeTurns(agents=2, max_rounds=6, history_rounds=6)
'''


def test_a_player_reads_nothing_about_the_rounds_it_sat_out(tmp_path: Path) -> None:
    out = tmp_path / "turns"
    assert cli(str(_file(tmp_path, SITTING_OUT, "turns.py")), "--out", str(out), "--no-live", "--runs", "1").returncode == 0
    with agentsim.open(out) as results:
        asked = results.decisions(prompts=True).dropna(subset=["reply"])
    last = asked[asked["context"].fillna("").str.len() > 0].groupby("agent")["prompt"].last()
    for agent, prompt in last.items():
        mine = {1, 3, 5} if agent == 0 else {2, 4, 6}
        shown = {int(number) for number in re.findall(r"- Round (\d+):", prompt)}
        assert shown and shown <= mine  # its own rounds only: no "Your payoff: 0." for the others'
    assert not asked["prompt"].str.contains("Your payoff: 0.", regex=False).any()


def test_a_kept_conversation_shows_a_players_earlier_move_in_the_same_round(tmp_path: Path) -> None:
    source = CENTIPEDE.replace("scenario = Centipede()", "scenario = Centipede(agents=2, max_rounds=2, conversation=True)")
    out = tmp_path / "talk"
    done = cli(str(_file(tmp_path, source, "talk.py")), "--out", str(out), "--no-live", "--runs", "1", "--seed", "3",
               "--set", "standin.invalid_rate=0")
    assert done.returncode == 0, done.stderr
    with agentsim.open(out) as results:
        calls = results.decisions(prompts=True).dropna(subset=["reply"])
    again = calls[calls["prompt"].str.contains("node 3")]
    for messages in again["messages"]:  # the player's own node-1 question and reply come before node 3
        said = [each["content"] for each in messages]
        assert any("node 1" in each for each in said[:-1]) and messages[-2]["role"] == "assistant"


def test_the_pirate_game_asks_the_next_proposer_in_the_next_round(tmp_path: Path) -> None:
    """As GAMA-Bench plays it (games/pirate_game.py there): a round per proposal, the proposer's
    own vote an accept, the next most senior pirate proposing in the next round, and with two
    aboard the proposer's vote is half, so the plan passes (no pirate is ever left alone)."""
    from agentsim.scenario_files import load_scenario

    _scenario, module = load_scenario(Path(__file__).parent.parent / "scenarios" / "gamabench" / "pirate_game.py")

    class Mutiny(module.PirateGame):  # type: ignore[name-defined,misc]
        def standin_choice(self, ask: Any, rng: Any) -> Any:
            return "reject" if ask.move == "vote" else super().standin_choice(ask, rng)

    out = tmp_path / "pirates"
    agentsim.run(Mutiny(agents=4, standin=module.PirateGame.standin.replace(invalid_rate=0.0)), out=out, runs=1)
    store = Store(out)
    lines = [json.loads(stats) for (stats,) in store.rows("SELECT stats FROM rounds ORDER BY round")]
    store.close()
    assert [line["groups"][0]["players"] for line in lines] == [[0, 1, 2, 3], [1, 2, 3], [2, 3]]
    for number, line in enumerate(lines):
        (group,) = line["groups"]
        assert group["moves"][0][:2] == [number, "propose"]  # the most senior pirate aboard proposes first
        assert [move[3] for move in group["moves"][1:]] == ["reject"] * (3 - number)
    assert lines[-1]["groups"][0]["ended"] == "a plan passed" and lines[-1]["data"]["responses"] == ["accept", "reject"]


def test_a_games_engine_pickles_as_its_game() -> None:
    """A Ray worker gets the run's plan pickled: the engine travels as its game (by the game's
    class, which the worker's loading of the same file defines), rebuilt around it."""
    import pickle

    from agentsim.scenario_files import load_scenario

    scenario, _module = load_scenario(Path(__file__).parent.parent / "scenarios" / "centipede.py")
    scenario = scenario.with_params(agents=6)
    again = pickle.loads(pickle.dumps(scenario))
    assert type(again) is type(scenario) and again.game.params == scenario.game.params
    assert repr(again) == "Centipede(agents=6)"
