"""GAMA-Bench-exact mode (`--set exact=true`): each game asked, read, told and paid as
GAMA-Bench's runner does it, with a checkout's texts (a small one written for the tests in the
formats: tests/gamabench_checkout.py). The expected prompts here are written out by hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gamabench_checkout import write_checkout
from helpers import ROOT

from agentsim.errors import ParameterError
from agentsim.games.gamabench.exact_reading import RunnerAnswer
from agentsim.llm.base import Completion, Request
from agentsim.model import BackendShare, PopulationModel
from agentsim.scenario_files import load_scenario


@pytest.fixture
def templates(tmp_path: Path) -> Path:
    return write_checkout(tmp_path / "GAMABench")


def game_class(name: str) -> Any:
    """The GAMA-Bench game a scenario file writes (the layer's engine wraps it)."""
    scenario, _ = load_scenario(ROOT / "scenarios" / "gamabench" / f"{name}.py")
    return type(scenario.game)


def game(name: str, templates: Path, **changes: Any) -> Any:
    return game_class(name)(exact=True, prompt_templates=str(templates), **changes)


class Scripted:
    """Answers `answer(player, round, attempt, request)`; keeps every request."""

    name = "scripted"
    immediate = True

    def __init__(self, answer: Callable[[int, int, int, Request], str]) -> None:
        self.answer = answer
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Completion:
        ask = request.situation
        player = int(ask.player.rsplit("_", 1)[1])
        attempt = sum(1 for earlier in self.requests if earlier.situation.player == ask.player
                      and earlier.situation.round == ask.round and earlier.situation.move == ask.move)
        self.requests.append(request)
        return Completion(text=self.answer(player, ask.round, attempt, request))

    async def aclose(self) -> None:
        return None

    def sent(self, player: int, round_: int, move: str = "choose") -> list[list[tuple[str, str]]]:
        return [[(message.role, message.content) for message in request.messages] for request in self.requests
                if request.situation.player == f"player_{player}" and request.situation.round == round_
                and request.situation.move == move]


def play(scenario: Any, backend: Scripted) -> PopulationModel:
    model = PopulationModel(scenario, seed=0, backends=[BackendShare(backend)])
    while model.running:
        model.step()
    return model


def test_the_runners_conversation_its_texts_and_no_answer_format_of_agentsims(templates: Path) -> None:
    picks = {(0, 1): 30, (1, 1): 60, (0, 2): 20, (1, 2): 40}
    backend = Scripted(lambda player, round_, attempt, request: json.dumps({"chosen_number": str(picks[player, round_])}))
    model = play(game("guessing_game", templates, agents=2, max_rounds=2), backend)
    system = "\n\n2 players, 2 rounds: pick from 0 to 100; nearest 2/3 of the mean wins."  # the empty role input first
    request_2 = 'Round 2 begins. Aim for 2/3 of the mean.\n\nJSON: {"chosen_number": "0..100"}'
    assert backend.sent(0, 1) == [[("system", system), ("user", request_2.replace("Round 2", "Round 1"))]]
    assert backend.sent(0, 2) == [[
        ("system", system),
        ("user", "Round 1: mean 45, target (2/3) 30.00, winner 30.\nYours:"),
        ("assistant", '{"chosen_number": "30"}'),  # the report's own part, as the assistant's turn
        ("user", "Won."),
        ("user", request_2),  # the round-1 request is not kept
    ]]
    assert model.state.score == {0: 0.0, 1: 0.0}, "the runner pays nothing in this game"
    (line,) = [line for line in model.metrics.lines() if line["round"] == 2]
    assert line["groups"][0]["data"]["winner"] == 20 and line["groups"][0]["winners"] == [0]


def test_a_reask_sends_the_same_messages_or_with_gemini_the_request_again(templates: Path) -> None:
    def answer(player: int, round_: int, attempt: int, request: Request) -> str:
        return "I pick 7" if attempt == 0 else '{"chosen_number": "7"}'  # the runner reads JSON alone

    backend = Scripted(answer)
    play(game("guessing_game", templates, agents=2, max_rounds=1, max_reasks=3), backend)
    first, again = backend.sent(0, 1)
    assert first == again, "the same messages again: no reply, no reminder"
    backend = Scripted(answer)
    model = play(game("guessing_game", templates, agents=2, max_rounds=1, max_reasks=3, structure="gemini"), backend)
    first, again = backend.sent(0, 1)
    request = 'Round 1 begins. Aim for 2/3 of the mean.\n\nJSON: {"chosen_number": "0..100"}'
    assert first[0][0] == "user" and first[1:] == [("user", request)], "the description opens the user's turn"
    assert again == first + [("user", request)]
    turns = model.state.private[0]["gamabench_conversation"]
    assert turns == [["user", [request, request, "Round 1: mean 7, target (2/3) 4.67, winner 7.\nYours:"]],
                     ["assistant", ['{"chosen_number": "7"}']], ["user", ["Won."]]]


def test_the_runner_drops_the_oldest_message_a_round_past_the_20th(templates: Path) -> None:
    backend = Scripted(lambda player, round_, attempt, request: '{"chosen_number": "5"}')
    play(game("guessing_game", templates, agents=2, max_rounds=22), backend)
    (twenty_one,), (twenty_two,) = backend.sent(0, 21), backend.sent(0, 22)
    assert len(twenty_one) == 1 + 3 * 20 + 1 and twenty_one[1][1].startswith("Round 1: mean 5")
    assert len(twenty_two) == 1 + 3 * 21 - 1 + 1, "one message dropped after round 21"
    assert twenty_two[1] == ("assistant", '{"chosen_number": "5"}'), "the oldest one after the system message"


def test_ranges_as_the_runner_has_them(templates: Path) -> None:
    def bids(player: int, round_: int, attempt: int, request: Request) -> str:
        return json.dumps({"bid_amount": "150" if player == 0 else "-3"})

    model = play(game("divide_dollar", templates, agents=2, max_rounds=1), Scripted(bids))
    (line,) = model.metrics.lines()
    assert line["groups"][0]["data"] == {"responses": [150, -3], "total_proposal": 147}, "any whole number"
    guessing = RunnerAnswer(game="guessing_game", within=(0, 100))
    assert guessing.read('{"chosen_number": "101"}')[0] is None and guessing.read('{"chosen_number": 7.9}') == ("7", None)
    assert guessing.read('Sure: {"chosen_number": "7"}')[0] is None, "JSON alone"
    assert RunnerAnswer(game="guessing_game").read('{"chosen_number": "101"}') == ("101", None), "no check, no range"
    # the range is the one the checkout's runner checks (here its min and max: 0 and 30)
    model = play(game("guessing_game", templates, agents=2, max_rounds=1, max=30, max_reasks=0),
                 Scripted(lambda player, round_, attempt, request: json.dumps({"chosen_number": 31 if player else 30})))
    (line,) = model.metrics.lines()
    assert [move[4] for move in line["groups"][0]["moves"]] == [False, True], "31 is asked again: a fallback here"
    assert RunnerAnswer(game="public_goods").read('Sure: {"tokens_contributed": "25"} ok') == ("25", None)


def test_any_dish_but_cheap_is_costly(templates: Path) -> None:
    dishes = {0: "Costly_Dish", 1: "cheap"}
    model = play(game("diner_dilemma", templates, agents=2, max_rounds=1),
                 Scripted(lambda player, round_, attempt, request: json.dumps({"chosen_dish": dishes[player]})))
    (line,) = model.metrics.lines()
    assert line["groups"][0]["data"]["responses"] == ["costly_dish", "cheap"]
    assert line["groups"][0]["data"]["cheap_player"] == 1 and line["groups"][0]["data"]["total_cost"] == 30
    assert model.state.score == {0: 20 - 15.0, 1: 15 - 15.0}


def test_battle_royale_pays_nothing_for_a_hit_and_reads_targets_as_the_runner(templates: Path) -> None:
    answers = {1: '{"action": "miss", "target": "player_2"}',  # the action is not read: a shot at player_2
               2: '{"action": "shoot", "target": null}'}  # null: a miss on purpose

    backend = Scripted(lambda player, round_, attempt, request: answers[round_])
    hits = type("AlwaysHits", (game_class("battle_royale"),), {"shot_hits": lambda self, number, shooter, rate, rng: True})
    model = play(hits(exact=True, prompt_templates=str(templates), agents=3, max_rounds=2), backend)
    first, second = model.metrics.lines()
    assert first["groups"][0]["data"]["shot_player"] == "2" and first["groups"][0]["eliminated"] == [[2, "shot"]]
    assert second["groups"][0]["data"]["action"] == "miss" and second["groups"][0]["moves"][0][0] == 1
    assert model.state.score == {0: 0.0, 1: 0.0, 2: 0.0}
    (sent,) = backend.sent(0, 1, "shoot")
    order = json.dumps([{"shooter 1st": "player_0", "rate": "35%"}, {"shooter 2nd": "player_1", "rate": "40%"},
                        {"shooter 3rd": "player_2", "rate": "45%"}], indent=0)
    assert sent[0] == ("system", f"\n\n3 shooters: {order}. You: player_0, 35%, 1-th.")
    assert sent[-1][1].startswith(f"Round 1: still in {order}. You: player_0, 35%, 1-th.")
    conversation = model.state.private[0]["gamabench_conversation"]
    assert conversation[:4] == [["user", ["Round 1.\nYours:"]], ["assistant", ['{"action": "shoot", "target": "2"}']],
                                ["user", ["You fired at player_2, a hit: player_2 is out.\n2 left."]],
                                ["user", ["Round 1: player_0 fired at player_2, a hit: player_2 is out.\n2 left."]]]


def test_the_pirates_vote_and_a_lone_pirate_is_asked_to_propose(templates: Path) -> None:
    def answer(player: int, round_: int, attempt: int, request: Request) -> str:
        if request.situation.move == "propose":
            shares = [1] * (3 - player)
            shares[0] += 3 - len(shares)
            return json.dumps({"proposal": {f"{player + 1 + index}-th": share for index, share in enumerate(shares)}})
        return '{"decision": "I reject it"}'

    backend = Scripted(answer)
    model = play(game("pirate_game", templates, agents=3, gold=3, max_rounds=3), backend)
    assert [line["groups"][0]["data"]["responses"] for line in model.metrics.lines()] == [
        ["accept", "reject", "reject"], ["accept", "reject"]], "the proposer's own vote is half of two"
    assert model.state.ended == "a plan passed" and model.state.score == {0: 0.0, 1: 2.0, 2: 1.0}
    (vote,) = backend.sent(1, 1, "vote")
    assert vote[-1] == ("user", "Pirate 1 proposes {'1-th': 1, '2-th': 1, '3-th': 1}; yours: 1.\n\n"
                                'JSON: {"decision": "accept_or_reject"}'), "the plan as the runner prints it"
    told = model.state.private[1]["gamabench_conversation"][0][1][0]
    assert told == "The 1-st pirate proposed {'1-th': 1, '2-th': 1, '3-th': 1}; 1 of 3 for.\nYours:"
    backend = Scripted(lambda player, round_, attempt, request: '{"proposal": {"1-th": "3"}}')
    model = play(game("pirate_game", templates, agents=1, gold=3), backend)
    (alone,) = backend.sent(0, 1, "propose")
    assert alone[-1] == ("user", 'You, pirate 1, split 3.\n\nJSON: {"proposal": {"1-th": "g", ..., "1-th": "g"}}')
    assert model.state.score == {0: 3.0}


def test_every_game_plays_exact_on_the_stand_in(templates: Path) -> None:
    for name in ("guessing_game", "bar_game", "divide_dollar", "public_goods", "diner_dilemma", "sealed_bid_auction",
                 "battle_royale", "pirate_game"):
        model = PopulationModel(game(name, templates, agents=3, max_rounds=2), seed=1)
        while model.running:
            model.step()
        assert model.metrics.lines(), name


def test_exact_needs_the_checkout_and_its_settings_need_exact(templates: Path) -> None:
    guessing = game_class("guessing_game")
    with pytest.raises(ParameterError, match="set prompt_templates"):
        guessing(exact=True)
    with pytest.raises(ParameterError, match="add --set exact=true"):
        guessing(structure="gemini")
    assert game("guessing_game", templates).params.sampling().max_tokens == 1024, "the runner's token limit"
    assert guessing().params.sampling().max_tokens == 64


def test_a_recorded_exact_run_rebuilds_the_runners_conversation_from_the_store(templates: Path, tmp_path: Path) -> None:
    """Runs record `RecordedGamaGame`: opened with no scenario file and no checkout, every call's
    messages rebuild as they were sent (the runner's conversation; with Gemini's structure, each
    re-ask's request again)."""
    from helpers import run_experiment

    import agentsim
    from agentsim.analysis.recorded import RecordedExperiment

    class Recording(Scripted):
        def __init__(self) -> None:
            super().__init__(lambda player, round_, attempt, request: "no JSON" if attempt == 0 and player == 1
                             else '{"chosen_number": "9"}')

    for structure in ("messages", "gemini"):
        backend = Recording()
        out = tmp_path / structure
        run_experiment(game("guessing_game", templates, agents=2, max_rounds=2, structure=structure).__scenario__(), out,
                       backend=lambda scenario, backend=backend: backend)
        recorded = RecordedExperiment(out)
        assert recorded.experiment["scenario_class"] == "agentsim.games.gamabench.recorded.RecordedGamaGame"
        scenario = recorded.scenario
        sent = {(request.situation.round, request.situation.player): [] for request in backend.requests}
        for request in backend.requests:
            sent[request.situation.round, request.situation.player].append(request.messages)
        calls = list(recorded.store.rows("SELECT t, agent, attempt FROM calls WHERE run = 1 ORDER BY t, agent, attempt"))
        assert len(calls) == len(backend.requests) == 2 * 2 + 2  # player 1 asked twice a round
        for t, agent, attempt in calls:
            rebuilt = recorded.store.messages(scenario, 1, t, agent, attempt)
            assert rebuilt == sent[t + 1, f"player_{agent}"][attempt], (structure, t, agent, attempt)
        recorded.close()
        with agentsim.open(out) as results:
            assert len(results.decisions(prompts=True)) >= 4
