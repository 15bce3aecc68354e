"""The Mesa model behaves as Mesa users expect: built with no backend (the stand-in), stepped
synchronously one population round at a time, its series in a real `mesa.DataCollector`, and
run over a parameter grid by `mesa.batch_run`."""

from __future__ import annotations

import asyncio

import mesa
from helpers import JitteryStandIn, run_model

from agentsim.games.naming import NamingGame
from agentsim.model import BackendShare, PopulationModel


def test_the_lines_a_mesa_user_writes_work_as_written() -> None:
    m = PopulationModel(NamingGame(agents=8), seed=0); m.step(); m.step(); m.step()  # noqa: E702
    frame = m.datacollector.get_model_vars_dataframe()
    assert isinstance(m.datacollector, mesa.DataCollector)
    assert len(frame) == 3 and m.steps == 3 and m.rounds_done == 3
    assert {"success_rate", "agreement", "leading_name", "leading_share"} <= set(frame.columns)
    assert frame["agreement"].between(0, 1).all() and frame["leading_name"].notna().all()
    assert m.completed == 3 * 4  # a population round is N/2 encounters


def test_batch_run_returns_a_row_per_run() -> None:
    rows = mesa.batch_run(PopulationModel, parameters={"scenario": NamingGame(agents=6), "seed": [1, 2]},
                          iterations=1, max_steps=2, number_processes=1, display_progress=False)
    assert len(rows) == 2
    assert sorted(row["seed"] for row in rows) == [1, 2]
    assert all(0 <= row["agreement"] <= 1 for row in rows)


def test_stepping_is_the_run_the_runner_makes() -> None:
    """`step()` plays the same rounds as `arun()` on the stand-in: same seed, same moves."""
    scenario = NamingGame(agents=8, max_rounds=4)
    stepped = PopulationModel(scenario, seed=3)
    while stepped.running:
        stepped.step()
    ran = run_model(scenario, seed=3)
    assert stepped.rounds_done == ran.rounds_done == 4
    assert [agent.state() for agent in stepped.agents] == [agent.state() for agent in ran.agents]
    assert len(stepped.datacollector.get_model_vars_dataframe()) == 4
    stepped.step()  # a finished run plays and records nothing more
    assert stepped.rounds_done == 4 and len(stepped.datacollector.get_model_vars_dataframe()) == 4


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
    assert len(model.datacollector.get_model_vars_dataframe()) == 3
    expected = run_model(scenario, seed=5, backend=JitteryStandIn(scenario.standin_part().rules))
    assert [agent.state() for agent in model.agents] == [agent.state() for agent in expected.agents]


def test_a_family_without_its_own_series_records_the_same_columns_every_step() -> None:
    """The default series are fixed when the model is made: SIGN's names first appear after
    a step, and a column per name would have been dropped."""
    from agentsim.games.sign import SignGame

    model = PopulationModel(SignGame(agents=8), seed=0)
    for _ in range(3):
        model.step()
    frame = model.datacollector.get_model_vars_dataframe()
    assert list(frame.columns) == ["success_rate", "leading_name", "leading_share"]
    assert len(frame) == 3 and frame["leading_share"].iloc[-1] > 0
