"""The Mesa model behaves as Mesa users expect: built with no backend (the stand-in), stepped
synchronously one population round at a time, its series in a real `mesa.DataCollector`, and
run over a parameter grid by `mesa.batch_run`."""

from __future__ import annotations

import asyncio
import itertools
import math
import re
from typing import Any

import mesa
import pandas as pd
import pytest
from helpers import ROOT, JitteryStandIn, run_model

from agentsim.errors import ParameterError, ScenarioFileError
from agentsim.games.naming import NamingGame
from agentsim.model import BackendShare, PopulationModel


def _mesa_page_lines() -> dict[str, Any]:
    """Run the code block of docs/mesa.md exactly as written."""
    page = (ROOT / "docs" / "mesa.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", page, re.S)
    assert code is not None
    # the lines (39): a scenario class and its parameters swept as Mesa sweeps a model's
    assert 'parameters={"scenario": NamingGame, "agents": [6, 10], "committed": range(0, 4), "seed": [1, 2]}' in code.group(1)
    namespace: dict[str, Any] = {}
    exec(compile(code.group(1), "docs/mesa.md", "exec"), namespace)
    return namespace


def test_the_lines_a_mesa_user_writes_work_as_written() -> None:
    lines = _mesa_page_lines()
    m, rows = lines["m"], lines["rows"]
    frame = m.datacollector.get_model_vars_dataframe()
    assert isinstance(m.datacollector, mesa.DataCollector)
    assert len(frame) == 4 and m.steps == 3 and m.rounds_done == 3  # step 0, then a row per step
    assert {"seed", "success_rate", "agreement", "leading_name", "leading_share"} <= set(frame.columns)
    assert isinstance(m.seed, int) and (frame["seed"] == m.seed).all()  # drawn, recorded, reported
    assert frame["agreement"].between(0, 1).all() and frame["leading_name"].iloc[1:].notna().all()
    assert frame["success_rate"].iloc[0] == 0 and pd.isna(frame["leading_name"].iloc[0])  # nothing played at step 0
    assert m.completed == 3 * 4  # a population round is N/2 encounters

    table = pd.DataFrame(rows)
    combinations = list(itertools.product([6, 10], range(4), [1, 2]))
    assert len(table) == len(combinations) * 1 * 3  # (combination, iteration, step): steps 0, 1, 2
    assert not table.duplicated(["agents", "committed", "seed", "iteration", "Step"]).any()
    assert set(zip(table["agents"], table["committed"], table["seed"], strict=True)) == set(combinations)
    assert table["agents"].dtype == "int64" and table["committed"].dtype == "int64" and table["seed"].dtype == "int64"
    assert (table["scenario"] == NamingGame).all()
    first = table[table["Step"] == 0]
    assert len(first) == len(combinations) and (first["success_rate"] == 0).all()  # the initial state


def test_a_row_is_the_run_its_parameters_make() -> None:
    """A swept row is the run `PopulationModel(NamingGame, **its parameters)` makes, step by step."""
    rows = mesa.batch_run(PopulationModel, parameters={"scenario": NamingGame, "agents": 8, "committed": [0, 2],
                                                       "seed": 4},
                          iterations=1, max_steps=2, data_collection_period=1, number_processes=1,
                          display_progress=False)
    for committed in (0, 2):
        model = PopulationModel(NamingGame(agents=8, committed=committed), seed=4)
        model.step(); model.step(); model.step()  # noqa: E702  (Mesa's max_steps=2 plays 3 steps)
        expected = model.datacollector.get_model_vars_dataframe()
        swept = pd.DataFrame([row for row in rows if row["committed"] == committed]).sort_values("Step")
        assert list(swept["Step"]) == [0, 1, 2]
        assert list(swept["agreement"]) == list(expected["agreement"].iloc[:3])
        assert list(swept["leading_share"]) == list(expected["leading_share"].iloc[:3])


def test_batch_run_over_processes_and_scenario_objects() -> None:
    """Spawned processes rebuild the model from its pickled parameters; a scenario object's
    row shows it readably, and the object's parameters are changed by the swept ones."""
    rows = mesa.batch_run(PopulationModel, parameters={"scenario": NamingGame(agents=6, max_rounds=5),
                                                       "committed": [0, 1], "seed": [1, 2]},
                          iterations=1, max_steps=1, number_processes=2, display_progress=False)
    assert len(rows) == 4  # the default data_collection_period: a row per run
    assert sorted((row["committed"], row["seed"]) for row in rows) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert {repr(row["scenario"]) for row in rows} == {"NamingGame(agents=6, max_rounds=5)"}
    assert all(row["Step"] == 1 for row in rows)


def test_scenarios_read_as_their_class_and_what_they_change() -> None:
    from agentsim.games.naming.standin import NamingStandInSettings

    assert repr(NamingGame()) == "NamingGame()"
    assert repr(NamingGame(agents=6, committed=2)) == "NamingGame(agents=6, committed=2)"
    assert repr(NamingGame(standin=NamingStandInSettings(noise=0.25))) == "NamingGame(standin=NamingStandInSettings(noise=0.25))"
    assert "object at" not in str(pd.DataFrame({"scenario": [NamingGame(agents=6)]}))


def test_arguments_a_model_cannot_take_are_refused_naming_them() -> None:
    with pytest.raises(TypeError, match=r"scenario takes a scenario file's path .*, a Scenario class or a Scenario object"):
        PopulationModel(3)  # type: ignore[arg-type]
    with pytest.raises(ScenarioFileError, match="scenario file 'x' not found"):  # text is a file's path, as agentsim.run reads it
        PopulationModel("x")
    with pytest.raises(ParameterError, match="unknown parameter 'agnets'; did you mean 'agents'"):
        PopulationModel(NamingGame, agnets=6)
    with pytest.raises(TypeError, match="seed must be a whole number"):
        PopulationModel(NamingGame, seed=1.5)  # type: ignore[arg-type]
    assert PopulationModel(NamingGame(agents=6), agents=10, seed=1).scenario.params.agents == 10
    with pytest.raises(TypeError, match="scenario takes a scenario file's path"):
        mesa.batch_run(PopulationModel, parameters={"scenario": 3.5}, iterations=1, max_steps=1,
                       display_progress=False)
    with pytest.raises(ValueError, match="seed= or rng=, not both"):
        PopulationModel(NamingGame, seed=1, rng=2)
    assert PopulationModel(NamingGame, rng=7).seed == 7


def test_stepping_is_the_run_the_runner_makes() -> None:
    """`step()` plays the same rounds as `arun()` on the stand-in: same seed, same moves."""
    scenario = NamingGame(agents=8, max_rounds=4)
    stepped = PopulationModel(scenario, seed=3)
    while stepped.running:
        stepped.step()
    ran = run_model(scenario, seed=3)
    assert stepped.rounds_done == ran.rounds_done == 4
    assert [agent.state() for agent in stepped.agents] == [agent.state() for agent in ran.agents]
    assert len(stepped.datacollector.get_model_vars_dataframe()) == 1 + 4
    stepped.step()  # a finished run plays and records nothing more
    assert stepped.rounds_done == 4 and len(stepped.datacollector.get_model_vars_dataframe()) == 1 + 4


def test_step_inside_a_running_event_loop_with_encounters_in_flight() -> None:
    """In a notebook Jupyter's loop is running: `step()` still works (on a worker thread), with
    a backend that suspends, whose encounters stay in flight from one step to the next."""
    scenario = NamingGame(agents=8, max_rounds=3).for_experiment(5)

    async def notebook_cell() -> PopulationModel:
        model = PopulationModel(scenario, seed=5, backends=[BackendShare(JitteryStandIn(scenario.standin_part().rules))])
        model.step()
        model.step()
        model.step()
        return model

    model = asyncio.run(notebook_cell())
    assert model.rounds_done == 3 and not model.running
    assert len(model.datacollector.get_model_vars_dataframe()) == 1 + 3
    expected = run_model(scenario, seed=5, backend=JitteryStandIn(scenario.standin_part().rules))
    assert [agent.state() for agent in model.agents] == [agent.state() for agent in expected.agents]


def test_the_series_record_the_same_columns_every_step() -> None:
    """The series are fixed when the model is made: SIGN's names first appear after a step, and
    a column per name would have been dropped; its agreement is a column from step 0."""
    from agentsim.games.sign import SignGame

    model = PopulationModel(SignGame(agents=8), seed=0)
    for _ in range(3):
        model.step()
    frame = model.datacollector.get_model_vars_dataframe()
    assert list(frame.columns) == ["seed", "success_rate", "leading_name", "leading_share", "agreement"]
    assert len(frame) == 1 + 3 and frame["leading_share"].iloc[-1] > 0


def test_a_restored_model_collects_from_the_state_it_resumed_from() -> None:
    played = PopulationModel(NamingGame(agents=8, max_rounds=6), seed=2)
    played.step(); played.step()  # noqa: E702
    restored = PopulationModel(NamingGame(agents=8, max_rounds=6), seed=2)
    restored.restore(played.checkpoint())
    frame = restored.datacollector.get_model_vars_dataframe()
    assert len(frame) == 1  # not the fresh model's step 0: the state after two rounds
    assert frame.iloc[0].to_dict() == played.datacollector.get_model_vars_dataframe().iloc[-1].to_dict()


def _scenario_class(file: str) -> Any:
    from agentsim.scenario_files import load_scenario

    return type(load_scenario(ROOT / "scenarios" / file)[0])


def test_batch_run_rows_carry_a_layer_games_series() -> None:
    """`mesa.batch_run(PopulationModel, parameters={"scenario": PublicGoods, ...})`: every row
    after step 0 has the game's mean choice (its move, the contribution), its mean payoff and,
    for GAMA-Bench's public goods game, its own 0-100 score so far, each recomputed here from
    the round lines of a model stepped by hand."""
    for file, scored in (("public_goods.py", False), ("gamabench/public_goods.py", True)):
        game = _scenario_class(file)
        rows = mesa.batch_run(PopulationModel, parameters={"scenario": game, "agents": 4, "max_rounds": 3, "seed": [1, 2]}
                              | ({} if scored else {"group_size": 4}),
                              iterations=1, max_steps=3, data_collection_period=1, number_processes=1, display_progress=False)
        table = pd.DataFrame(rows)
        assert {"mean_choice", "mean_payoff", "score", "fallbacks"} <= set(table.columns), file
        for column in ("mean_choice", "mean_payoff", "score"):
            assert table[column].dtype == "float64", (file, column)  # one dtype: NaN where there is none yet
        played = table[table["Step"] > 0]
        assert played["mean_choice"].notna().all() and played["mean_payoff"].notna().all(), file
        assert played["score"].notna().all() if scored else played["score"].isna().all(), file
        model = PopulationModel(game, agents=4, max_rounds=3, seed=1, **({} if scored else {"group_size": 4}))
        for step in (1, 2):
            model.step()
            lines = model.metrics.lines()
            chosen = [float(move[3]) for group in lines[-1]["groups"] for move in group["moves"] if not move[4]]
            row = table[(table["seed"] == 1) & (table["Step"] == step)].iloc[0]
            assert row["mean_choice"] == pytest.approx(sum(chosen) / len(chosen)), file
            assert row["mean_payoff"] == pytest.approx(lines[-1]["mean_payoff"]), file
            if scored:
                assert row["score"] == pytest.approx(model.scenario.game.score(lines)) and 0 <= row["score"] <= 100


def test_a_game_of_several_moves_has_a_series_per_move() -> None:
    """A game that declares its moves (`moves = ("send", "return")`: the trust game; the
    ultimatum game's offer and response) gets one `mean_choice.MOVE` column per move in the
    DataCollector and in `mesa.batch_run`'s rows, each the mean of that move's choices in the
    round (NaN for a move of options); a game of one move keeps its `mean_choice`."""
    trust = _scenario_class("trust_game.py")
    rows = mesa.batch_run(PopulationModel, parameters={"scenario": trust, "agents": 6, "max_rounds": 3, "seed": [1, 2]},
                          iterations=1, max_steps=3, data_collection_period=1, number_processes=1, display_progress=False)
    table = pd.DataFrame(rows)
    assert {"mean_choice.send", "mean_choice.return"} <= set(table.columns) and "mean_choice" not in table.columns
    assert table[table["Step"] > 0]["mean_choice.send"].notna().all()
    model = PopulationModel(trust, agents=6, max_rounds=3, seed=1)
    for step in (1, 2):
        model.step()
        line = model.metrics.lines()[-1]
        row = table[(table["seed"] == 1) & (table["Step"] == step)].iloc[0]
        for move in ("send", "return"):
            chosen = [float(entry[3]) for group in line["groups"] for entry in group["moves"]
                      if entry[1] == move and not entry[4]]
            expected = sum(chosen) / len(chosen) if chosen else None
            assert (row[f"mean_choice.{move}"] == pytest.approx(expected) if chosen else
                    math.isnan(row[f"mean_choice.{move}"])), (step, move)
    ultimatum = PopulationModel(_scenario_class("ultimatum.py"), seed=1, max_rounds=2)
    ultimatum.step()
    frame = ultimatum.datacollector.get_model_vars_dataframe()
    assert {"mean_choice.offer", "mean_choice.respond"} <= set(frame.columns)
    assert frame["mean_choice.offer"].iloc[-1] >= 0 and math.isnan(frame["mean_choice.respond"].iloc[-1])
    assert "mean_choice" in PopulationModel(_scenario_class("centipede.py"), seed=1).datacollector.model_reporters


@pytest.mark.parametrize(("file", "params", "columns"), [
    ("commons_fishing.py", {"months": 2}, {"month", "stock", "agreed_limit", "harvest", "survival_months", "gain",
                                           "efficiency", "equality", "over_usage", "collapsed"}),
    ("donor_game.py", {"generations": 2}, {"generation", "mean_payoff", "donation_fraction", "cooperation_rate"}),
    ("sign_schema.py", {"agents": 6, "lexicon_size": 6, "max_rounds": 4}, {"agreement", "success_rate", "leading_name"}),
    ("network_topology.py", {"agents": 8, "max_rounds": 4, "topologies": ("ring",)}, {"topology", "agreement",
                                                                                        "agreement_round"}),
])
def test_every_familys_series_in_the_datacollector(file: str, params: dict[str, Any], columns: set[str]) -> None:
    """Each family's own series are the DataCollector's columns (the commons' stock and GovSim's
    metrics, evolution's generation and donations, SIGN's agreement, a network's topology)."""
    scenario = _scenario_class(file)
    model = PopulationModel(scenario, seed=1, **params)
    while model.running and model.steps < 40:
        model.step()
    frame = model.datacollector.get_model_vars_dataframe()
    assert columns <= set(frame.columns), (file, set(frame.columns))
    summary = model.readout.run_summary(model)
    last = frame.iloc[-1]
    if file == "commons_fishing.py":
        assert last["stock"] == model.state.stock and last["efficiency"] == pytest.approx(summary["efficiency"])
        assert frame["month"].dtype == "float64" and frame["agreed_limit"].dtype == "float64"
    elif file == "donor_game.py":
        assert last["mean_payoff"] == pytest.approx(summary["generations"][-1]["mean_payoff"])
    elif file == "sign_schema.py":
        assert last["agreement"] == pytest.approx(summary["agreement_by_round"][-1], abs=1e-4)
    else:
        assert (frame["topology"] == "ring").all()
