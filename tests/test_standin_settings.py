"""The stand-in's settings live with the stand-in, not in the experiment's parameters: each game
family's frozen settings class, carried by the scenario as `standin`, set from the command line
as `standin.KEY`, recorded beside the parameters (and moved there from stores written when they
were parameters), and answered from by the rules."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers import Quiet, run_experiment

from agentsim.analysis.recorded import RecordedExperiment
from agentsim.errors import ParameterError
from agentsim.games.commons import CommonsGame, CommonsStandIn, CommonsStandInSettings
from agentsim.games.commons.situations import CommonsSituation
from agentsim.games.evolution import DonorGame, EvolutionStandInSettings, StagHunt
from agentsim.games.evolution.prompts import DonorView, StagView, Task
from agentsim.games.evolution.standin import COOPERATIVE, SELFISH, strategy_sentence
from agentsim.games.naming import NamingGame, NamingSituation, NamingStandInSettings
from agentsim.games.naming.bias import backend_label
from agentsim.games.sign import SignGame, SignStandInSettings
from agentsim.games.theory.inventory import MinimalNamingGame
from agentsim.llm.base import Message, Request, Sampling
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.scheduler import Encounter
from agentsim.store import STORE_VERSION, Store

FAVOURING = NamingStandInSettings(bias_name="M", bias=0.5, noise=0.1)


def test_the_settings_travel_with_the_scenario_and_reach_its_rule() -> None:
    game = NamingGame(agents=6, names=("Q", "M"), standin=FAVOURING)
    assert "standin_bias" not in game.params.as_dict()
    moved = game.with_params(agents=8).for_experiment(0).with_overrides({"standin.invalid_rate": "0.25", "max_rounds": "4"})
    assert moved.standin == NamingStandInSettings(bias_name="M", bias=0.5, noise=0.1, invalid_rate=0.25)
    assert (moved.params.agents, moved.params.max_rounds) == (8, 4)
    rule = moved.standin_part().rules[0]
    assert (rule.bias_name, rule.bias, rule.noise, rule.invalid_rate) == ("M", 0.5, 0.1, 0.25)
    assert game.standin == FAVOURING, "scenarios are immutable"

    class Favouring(NamingGame):  # a subclass sets them as a class attribute
        standin = FAVOURING

    assert Favouring(names=("Q", "M")).with_overrides({"standin.noise": "0.3"}).standin.noise == 0.3
    assert Favouring().standin_part().rules[0].bias_name == "M"
    assert NamingGame().standin == NamingStandInSettings(), "the subclass's settings are its own"


def test_wrong_settings_are_refused_with_the_fix() -> None:
    with pytest.raises(ParameterError, match=r"standin= takes SignStandInSettings for SignGame \(got NamingStandInSettings\)"):
        SignGame(standin=FAVOURING)
    with pytest.raises(ParameterError, match=r"standin.free_none_rate \+ standin.free_several_rate must be at most 1"):
        SignStandInSettings(free_none_rate=0.6, free_several_rate=0.6)
    with pytest.raises(ParameterError, match=r"unknown stand-in setting 'standin.greed'; known stand-in settings are: "
                                             r"standin.greedy_share, standin.invalid_rate, standin.naive_catch"):
        CommonsGame().with_overrides({"standin.greed": "1"})
    with pytest.raises(ParameterError, match=r"unknown parameter 'standin_noise': the stand-in's settings are set as "
                                             r"standin.KEY=VALUE \(standin.bias, standin.bias_name"):
        NamingGame().with_overrides({"standin_noise": "0.1"})
    with pytest.raises(ParameterError, match=r"agents follow a rule and ask no stand-in; drop standin\.noise"):
        MinimalNamingGame().with_overrides({"standin.noise": "0.1"})
    with pytest.raises(ParameterError, match=r"standin.bias_name 'Z' is not in the name pool Q, M"):
        NamingGame(names=("Q", "M"), standin=NamingStandInSettings(bias_name="Z")).for_experiment(0)


def test_a_run_records_its_settings_and_the_analyses_read_them_back(tmp_path: Path) -> None:
    game = NamingGame(agents=6, names=("Q", "M"), max_rounds=3, stop_at="none", standin=FAVOURING)
    run_experiment(game, tmp_path / "out", seed=2)
    store = Store(tmp_path / "out")
    assert store.experiment()["standin"] == FAVOURING.as_dict()
    assert not any(key.startswith("standin") for key in store.experiment()["params"])
    store.close()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stand_in"] and summary["standin"] == FAVOURING.as_dict()
    recorded = RecordedExperiment(tmp_path / "out")
    assert recorded.scenario.standin == FAVOURING
    assert backend_label(recorded) == "stand-in (favours M, bias 0.5, noise 0.1)"
    recorded.close()


def test_a_store_from_when_they_were_parameters_is_read_and_resumed(tmp_path: Path) -> None:
    """Before store version 5 the settings were parameters named standin_KEY: opening such a
    store reads them moved (a reader writes nothing), so the analyses label it as before, and a resume
    moves them in the file and finds the same experiment."""
    game = NamingGame(agents=6, names=("Q", "M"), max_rounds=3, stop_at="none", standin=FAVOURING)
    run_experiment(game, tmp_path, seed=2)
    with sqlite3.connect(tmp_path / "agentsim.db") as connection:
        (params,) = connection.execute("SELECT value FROM experiment WHERE key = 'params'").fetchone()
        old = json.loads(params) | {f"standin_{key}": value for key, value in FAVOURING.as_dict().items()}
        connection.execute("UPDATE experiment SET value = ? WHERE key = 'params'", (json.dumps(old),))
        connection.execute("DELETE FROM experiment WHERE key = 'standin'")
        connection.execute("UPDATE experiment SET value = '4' WHERE key = 'store_version'")
    recorded = RecordedExperiment(tmp_path)
    assert recorded.standin == FAVOURING.as_dict() and "standin_bias" not in recorded.params
    assert recorded.store.experiment()["store_version"] == 4  # a reader writes nothing: the file is as it was
    assert backend_label(recorded) == "stand-in (favours M, bias 0.5, noise 0.1)"
    recorded.close()
    experiment = Experiment(ExperimentConfig(scenario=game, out=tmp_path, seed=2, resume=True), Quiet())
    experiment.open()  # the same experiment: no "holds a different experiment"
    assert experiment.store.experiment()["store_version"] == STORE_VERSION  # a resume writes, and upgrades
    experiment.store.close()
    experiment.lock.release()


def test_the_commons_standin_answers_from_the_situation_not_the_text() -> None:
    """Given the call's situation it needs no prompt text: the same answer with the messages
    blanked, and none for a situation of another game."""
    game = CommonsGame(resource="pasture", capacity=60, initial_stock=60)
    rule = game.standin_part().rules[0]
    assert isinstance(rule, CommonsStandIn) and rule.settings == CommonsStandInSettings()
    memories = (("2024-01-01", "The community agreed on a maximum limit of 5 flocks per person."),)
    situations = [
        CommonsSituation(kind="harvest", month=1, agent=0, name="John", date="2024-02-01", others=("Kate",), stock=40,
                         memories=memories),
        CommonsSituation(kind="utterance", month=1, agent=0, name="John", date="2024-02-01", others=("Kate",),
                         participants=("John", "Kate"), memories=memories,
                         conversation=(("Mayor", "John sent 5 flocks of sheep."),)),
        CommonsSituation(kind="limit", month=1, agent=2, conversation=(("John", "I propose we each take at most 6"),
                                                                        ("Kate", "I agree with 6 each"))),
        CommonsSituation(kind="reflection", month=1, agent=0, name="John", memories=memories),
        CommonsSituation(kind="importance", month=1, agent=0, name="John", memory=memories[0][1]),
    ]
    answers = []
    for situation in situations:
        request = Request(messages=game.codec.messages(situation), sampling=Sampling(), seed=7, situation=situation)
        blank = Request(messages=(Message("user", ""),), sampling=Sampling(), seed=7, situation=situation)
        answers.append(rule.answer(request))
        assert answers[-1] is not None and rule.answer(blank) == answers[-1]
    assert answers[0].endswith("Answer: 5 flocks.") or answers[0].endswith(("Answer: 4 flocks.", "Answer: 6 flocks."))
    assert answers[2].endswith("Answer: 6") and answers[4].startswith("Rating: ")
    other = Request(messages=(Message("user", "range set between 0-10"),), sampling=Sampling(), seed=7,
                    situation=NamingSituation(("Q", "M"), ()))
    assert rule.answer(other) is None


def test_the_evolution_standin_answers_from_the_situation_not_the_text() -> None:
    """Tasks and turns of both games: the same answer with the messages blanked (the re-ask count
    still comes from the conversation's length), and none for another game's situation."""
    strategy = strategy_sentence([60, 80, 50, 10], donor=True)
    norms = f"{COOPERATIVE[0]} {COOPERATIVE[1]} {SELFISH[0]}"
    donor = DonorGame(agents=4, punishment="costly", standin=EvolutionStandInSettings(invalid_rate=0.0))
    hunt = StagHunt(agents=4)
    cases = [
        (donor, Task("strategy", "Ada", 1)),
        (donor, Task("inherit", "Ada", 2, source=f"Bo (score 30): {strategy}")),
        (hunt, Task("mutate_strategy", "Ada", 2, source=strategy_sentence([40, 90, 50, 5], donor=False))),
        (donor, Task("elicit", "Ada", 1, source="cooperative and altruistic")),
        (donor, Task("revise", "Ada", 1, norms=norms, strategy=strategy)),
        (donor, Task("mutate", "Ada", 2, source=norms)),
        (donor, DonorView("Ada", 1, 0, 2, strategy, norms, 12.5, "Bo", 10.0, "In round 1, Bo donated 70% to Cy.")),
        (hunt, StagView("Ada", 1, 0, 2, strategy, "", "Bo", "In round 1, you hunted a STAG and Bo hunted a HARE.")),
    ]
    for game, situation in cases:
        rule = game.standin_part().rules[0]
        request = Request(messages=game.codec.messages(situation), sampling=Sampling(), seed=11, situation=situation)
        blank = Request(messages=(Message("system", ""), Message("user", "")), sampling=Sampling(), seed=11,
                        situation=situation)
        answer = rule.answer(request)
        assert answer is not None and rule.answer(blank) == answer, situation
        assert game.codec.parse(answer, situation).problem is None, (situation, answer)
    turn = cases[6][1]
    assert "Answer: Donate, " in (donor.standin_part().rules[0].answer(
        Request(messages=donor.codec.messages(turn), sampling=Sampling(), seed=11, situation=turn)) or "")
    assert donor.standin_part().rules[0].answer(Request(messages=(), sampling=Sampling(), situation=("Q", "M"))) is None


def test_the_sign_standin_takes_the_schema_demand_from_the_situation() -> None:
    """Whether a reply must follow `@say {name: Ck}` comes with the situation (the prompt's
    template demands it), not from reading the system prompt."""
    for condition in ("schema", "nl-sw", "nl"):
        game = SignGame(condition=condition, standin=SignStandInSettings(schema_error_rate=0.0)).for_experiment(0)
        (situation,) = game.start(None, Encounter(0, 0, (SignAgentStub(),), drawn=(0.5,)))
        assert situation.schema == (condition == "schema")
        rule = game.standin_part().rules[0]
        request = Request(messages=game.codec.messages(situation), sampling=Sampling(), seed=3, situation=situation)
        blank = Request(messages=(Message("system", ""), Message("user", "")), sampling=Sampling(), seed=3,
                        situation=situation)
        answer = rule.answer(request)
        assert answer is not None and rule.answer(blank) == answer
        assert answer.startswith("@say {name: ") == (condition == "schema")
        assert game.codec.decode(game.codec.encode(situation)).schema == situation.schema


class SignAgentStub:
    current, memory, index = "C3", ("C1", "C3"), 0
