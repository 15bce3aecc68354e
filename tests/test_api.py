"""The Python API: the three lines a notebook writes (run, then DataFrames), in and out of a
running event loop, with a file, a Scenario object or a subclass; `agentsim.open(DIR)` reads a
finished directory as the same results."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers import ROOT

import agentsim
from agentsim.errors import UserError
from agentsim.games.naming import NamingGame, NamingStandInSettings

CRITICAL_MASS = str(ROOT / "scenarios" / "critical_mass.py")


def test_the_three_line_notebook_use(tmp_path: Path) -> None:
    results = agentsim.run(CRITICAL_MASS, runs=2, overrides={"max_rounds": 3, "committed": "8"})
    runs, moves = results.runs(), results.moves()

    assert results.directory.parent == Path("results") / "critical_mass"  # as the command line names it
    assert list(runs["run"]) == [1, 2] and set(runs["status"]) == {"done"} and set(runs["committed"]) == {8}
    connection = sqlite3.connect(results.directory / "agentsim.db")
    assert len(moves) == connection.execute("SELECT COUNT(*) FROM moves").fetchone()[0] == 2 * 3 * 12 * 2
    assert set(moves["action"]) == {"Q", "M"} and not moves["fallback"].any()
    assert (moves.loc[moves["kind"] == "committed", "action"] == "Q").all()
    assert set(moves["round"]) == {0, 1, 2}
    rounds = results.rounds()
    assert len(rounds) == 2 * 3 and (rounds["interactions"] == 12).all()
    assert (rounds["productions.Q"] + rounds["productions.M"] == 24).all()
    by_model = results.by_model().set_index("model")
    assert by_model.loc["committed:Q", "agents"] == 8 and by_model.loc["stand-in", "agents"] == 16
    assert by_model["decisions"].sum() == len(moves)
    situations = results.moves(situations=True)
    first = situations[(situations["kind"] == "llm")].iloc[0]
    assert set(first["options"]) == {"Q", "M"} and len(first["memory"]) == 5  # the consensus on M it started from


def test_decisions_come_with_their_rebuilt_prompts_and_replies(tmp_path: Path) -> None:
    results = agentsim.run(NamingGame(agents=4, max_rounds=1, names=("Q", "M")), out=tmp_path / "out")
    decisions = results.decisions(prompts=True)
    assert len(decisions) == 4 and decisions["prompt"].notna().all() and decisions["reply"].notna().all()
    assert all("[system]" in prompt and ("[Q, M]" in prompt or "[M, Q]" in prompt) for prompt in decisions["prompt"])
    assert "prompt" not in results.decisions().columns


def test_run_inside_a_running_event_loop_and_arun(tmp_path: Path) -> None:
    """A notebook cell runs inside Jupyter's loop: `run` still works; async code awaits `arun`."""
    game = NamingGame(agents=4, max_rounds=2)

    async def cell() -> tuple[agentsim.Results, agentsim.Results]:
        return (agentsim.run(game, out=tmp_path / "sync", seed=3),
                await agentsim.arun(game, out=tmp_path / "async", seed=3))

    synchronous, awaited = asyncio.run(cell())
    assert synchronous.moves().equals(awaited.moves()) and len(awaited.moves()) == 2 * 2 * 2


def test_open_reads_a_directory_as_the_same_results(tmp_path: Path) -> None:
    ran = agentsim.run(NamingGame, overrides={"agents": 6, "max_rounds": 2, "standin.noise": 0.2}, runs=2,
                       out=tmp_path / "out")
    opened = agentsim.open(tmp_path / "out")
    pd.testing.assert_frame_equal(ran.runs(), opened.runs())
    pd.testing.assert_frame_equal(ran.moves(), opened.moves())
    assert opened.experiment["standin"]["noise"] == 0.2 and opened.summary()["stand_in"] is True
    html = opened.report()
    assert html.is_file() and opened.figures()


def test_a_subclass_and_python_valued_overrides(tmp_path: Path) -> None:
    class Favouring(NamingGame):
        standin = NamingStandInSettings(bias_name="M", bias=1.0, noise=0.0)

    results = agentsim.run(Favouring, overrides={"agents": 4, "max_rounds": 2, "names": ("Q", "M")},
                           out=tmp_path / "out")
    assert set(results.moves()["action"]) == {"M"}


def test_mistakes_raise_the_one_line_the_command_line_prints(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown parameter 'agent'"):
        agentsim.run(NamingGame, overrides={"agent": 4}, out=tmp_path / "a")
    with pytest.raises(UserError, match="provider"):
        agentsim.run(NamingGame, backend="nonsense:x", out=tmp_path / "b")
    with pytest.raises(UserError, match=r"holds no agentsim\.db"):
        agentsim.open(tmp_path)
    assert not (tmp_path / "a").exists()
    network = str(ROOT / "scenarios" / "network_topology.py")
    for value in (6, "6"):  # a typed value is refused as the text is: the scenario reads `topologies`
        with pytest.raises(UserError, match="does not read parameter 'topology_degree'"):
            agentsim.run(network, overrides={"topology_degree": value}, out=tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_arguments_of_the_wrong_type_name_the_argument(tmp_path: Path) -> None:
    """Issue 37, item 15: a bare AttributeError told nobody which argument was wrong."""
    import mesa

    from agentsim.model import PopulationModel

    for arguments, named in (({"options": "x"}, "options="), ({"overrides": ["agents"]}, "overrides="),
                             ({"seed": "3"}, "seed="), ({"backend": 3}, "backend="), ({"resume": "yes"}, "resume=")):
        with pytest.raises(TypeError, match=named) as raised:
            agentsim.run(NamingGame, out=tmp_path / "a", **arguments)
        assert isinstance(raised.value, UserError)
    assert not (tmp_path / "a").exists()
    with pytest.raises(TypeError, match=r"scenario takes a scenario file's path .*, a Scenario class or a Scenario object"):
        PopulationModel(3, seed=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="scenario takes a scenario file's path"):
        mesa.batch_run(PopulationModel, parameters={"scenario": 3.5, "seed": 0}, iterations=1, max_steps=2,
                       display_progress=False)
    with pytest.raises(TypeError, match="scenario takes a scenario file's path"):
        agentsim.run(3.5, out=tmp_path / "a")  # type: ignore[arg-type]


@pytest.mark.parametrize("damage", ["truncated", "empty", "foreign", "no experiment"])
def test_open_refuses_a_damaged_or_foreign_database(tmp_path: Path, damage: str) -> None:
    out = tmp_path / "out"
    agentsim.run(NamingGame(agents=6, max_rounds=2), out=out)
    database = out / "agentsim.db"
    if damage == "truncated":
        database.write_bytes(database.read_bytes()[:-5000])
    elif damage == "empty":
        database.write_bytes(b"")
    else:
        database.unlink()
        connection = sqlite3.connect(database)
        connection.execute("CREATE TABLE customers (name TEXT)" if damage == "foreign" else
                           "CREATE TABLE experiment (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.commit()
        connection.close()
    before = database.read_bytes()
    with pytest.raises(UserError) as raised:
        agentsim.open(out)
    assert "\n" not in str(raised.value) and str(database) in str(raised.value)
    assert database.read_bytes() == before


def test_a_resume_keeps_the_recorded_run_count(tmp_path: Path) -> None:
    """Issue 37, item 6, from Python: the file's RUNS does not add replicates to a resume."""
    scenario = tmp_path / "three.py"
    scenario.write_text(Path(CRITICAL_MASS).read_text() + "\nRUNS = 3\n")
    out = tmp_path / "out"
    agentsim.run(scenario, runs=1, out=out, overrides={"max_rounds": 2})
    resumed = agentsim.run(scenario, out=out, resume=True, overrides={"max_rounds": 2})
    assert list(resumed.runs()["run"]) == [1]
    with pytest.raises(UserError, match="--add-runs"):
        agentsim.run(scenario, runs=2, out=out, resume=True, overrides={"max_rounds": 2})
