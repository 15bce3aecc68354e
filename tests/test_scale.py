"""Populations at scale, exactly (issue 48): what a run records (`--record moves`, `rounds`,
`summary`) changes what is kept, never what is played: runs at every level and at any
concurrency make the same moves where both record them and end the same; and a run of 100,000
agents killed mid-run resumes to the results of the run that was never stopped."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from helpers import JitteryStandIn, Quiet, cli_in_process, dump

from agentsim.analysis.report import build_report
from agentsim.errors import UserError
from agentsim.games.naming import NamingGame
from agentsim.results import Results
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.store import sampled_agents
from agentsim.topology import Topology, neighbourhood
from agentsim.watch import Watcher


def _run(out: Path, *, record: str, in_flight: int, salt: int | None) -> None:
    """The naming game, 300 agents (a sample of 100 at --record rounds) for 6 rounds; asked
    through a stand-in whose answers come back out of order (`salt`), or in process."""
    game = NamingGame(agents=300, pool_size=5, stop_at="none", max_rounds=6, max_in_flight=in_flight)
    experiment = Experiment(ExperimentConfig(scenario=game, out=out, seed=3, record=record), Quiet())
    experiment.open()
    if salt is not None:
        experiment.backends = {"stand-in": JitteryStandIn(experiment.scenario.standin_part().rules, salt=salt)}
    asyncio.run(experiment.run())


def _game_summary(out: Path) -> dict[str, Any]:
    """The run's summary as the game reports it (what it played), without what depends on
    how it was recorded or how fast answers came."""
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    return {key: value for key, value in run.items() if key not in ("record", "usage_by_backend")}


def test_every_recording_level_and_concurrency_plays_the_same_moves(tmp_path: Path) -> None:
    _run(tmp_path / "moves", record="moves", in_flight=1, salt=1)
    _run(tmp_path / "rounds", record="rounds", in_flight=32, salt=2)
    _run(tmp_path / "summary", record="summary", in_flight=8, salt=None)
    every = dump(tmp_path / "moves" / "agentsim.db")
    sampled = dump(tmp_path / "rounds" / "agentsim.db")
    nothing = dump(tmp_path / "summary" / "agentsim.db")
    sample = sampled_agents(300)
    assert len(sample) == 100
    followed = {(run, t) for run, t, agent, *_ in every["decisions"] if agent in sample}
    assert 0 < len(followed) < len(every["encounters"])
    # The sample's encounters, whole (both players' decisions), row for row as every move recorded them.
    assert sampled["encounters"] == [row for row in every["encounters"] if (row[0], row[1]) in followed]
    assert sampled["decisions"] == [row for row in every["decisions"] if (row[0], row[1]) in followed]
    assert sampled["rounds"] == every["rounds"] and len(every["rounds"]) == 6
    assert nothing["encounters"] == nothing["decisions"] == nothing["rounds"] == []
    summaries = [_game_summary(tmp_path / level) for level in ("moves", "rounds", "summary")]
    assert summaries[0]["interactions"] == 900 and summaries[0] == summaries[1] == summaries[2]
    # What each level keeps, said by the results and refused in one line where it is not kept.
    with Results(tmp_path / "rounds") as results:
        assert results.record == "rounds"
        assert len(results.moves(sample=True)) == len(sampled["decisions"])
        with pytest.raises(UserError, match=r"--record rounds.*moves\(sample=True\)") as refused:
            results.moves()
        assert "\n" not in str(refused.value)
    with Results(tmp_path / "summary") as results, pytest.raises(UserError, match="--record summary"):
        results.decisions()
    assert json.loads((tmp_path / "summary" / "summary.json").read_text())["record"] == "summary"
    (watched,) = Watcher(tmp_path / "rounds").state()["experiments"]
    assert watched["record"] == "rounds" and watched["runs"][0]["interactions"] == 900
    index = build_report(tmp_path / "summary")
    assert index["sections"] == ["record"] and index["tables"][0]["rows"] == 1  # the level said, each run's summary shown


def test_a_resume_keeps_the_recorded_level(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out, record="rounds", in_flight=4, salt=None)
    game = NamingGame(agents=300, pool_size=5, stop_at="none", max_rounds=6, max_in_flight=4)
    with pytest.raises(UserError, match="records its runs at --record rounds") as refused:
        Experiment(ExperimentConfig(scenario=game, out=out, seed=3, resume=True, record="moves"), Quiet()).open()
    assert "\n" not in str(refused.value)
    resumed = Experiment(ExperimentConfig(scenario=game, out=out, seed=3, resume=True), Quiet())
    resumed.open()
    assert resumed.config.record == "rounds"
    asyncio.run(resumed.run())


SCENARIO = """from agentsim.games.theory import MinimalNamingGame

scenario = MinimalNamingGame(agents=100_000, names=("A", "B"), majority_name="B", committed_name="A",
                             committed_fraction=0.12, stop_at="none", max_rounds=2)
"""
ARGUMENTS = ("--checkpoint-seconds", "0", "--record", "rounds", "--no-live")


def _checkpointed_rounds(database: Path) -> int:
    """Population rounds the run's last checkpoint holds (0 before the first)."""
    try:
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1)
        try:
            row = connection.execute("SELECT state FROM checkpoints WHERE run = 1").fetchone()
        finally:
            connection.close()
    except sqlite3.Error:
        return 0
    return json.loads(zlib.decompress(row[0]))["state"]["rounds_done"] if row else 0


def _population(database: Path) -> Any:
    connection = sqlite3.connect(database)
    blob = connection.execute("SELECT state FROM checkpoints WHERE run = 1").fetchone()[0]
    connection.close()
    state = json.loads(zlib.decompress(blob))["state"]
    return state["population"], state["metrics"], state["random"]


def test_a_killed_run_of_100000_agents_resumes_to_identical_results(tmp_path: Path) -> None:
    """Rule agents (the binary naming game), 100,000 of them for two rounds, checkpointed
    every round: killed (SIGKILL) once its first round is checkpointed, then resumed; the
    store, every agent's inventory and the metrics are those of the run never stopped."""
    scenario = tmp_path / "hundred_thousand.py"
    scenario.write_text(SCENARIO)
    killed = tmp_path / "killed"
    process = subprocess.Popen([sys.executable, "-m", "agentsim", str(scenario), "--out", str(killed), *ARGUMENTS],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _checkpointed_rounds(killed / "agentsim.db") < 1:
        assert process.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    if process.stderr:
        process.stderr.close()
    assert _checkpointed_rounds(killed / "agentsim.db") < 2, "killed too late: the run had ended"
    assert cli_in_process("--resume", "--out", str(killed), "--no-live").returncode == 0
    whole = tmp_path / "whole"
    assert cli_in_process(str(scenario), "--out", str(whole), *ARGUMENTS).returncode == 0
    resumed, reference = dump(killed / "agentsim.db"), dump(whole / "agentsim.db")
    assert len(reference["rounds"]) == 2 and reference["encounters"], "the sample's encounters and the rounds"
    assert resumed == reference
    assert _population(killed / "agentsim.db") == _population(whole / "agentsim.db")


@pytest.mark.parametrize("kind", ["ring", "lattice"])
def test_rings_and_lattices_are_written_down_as_networkx_builds_them(kind: str) -> None:
    """The scheduler's partners on a ring or a lattice come from lists written directly (a
    million agents need no graph object): the same lists, in the same order, as the graph's."""
    for size in (4, 6, 9, 12, 30, 303):
        for degree in (2, 4, 6):
            topology = Topology(kind=kind, degree=degree)
            if kind == "ring" and not 2 <= degree < size:
                continue
            graph = topology.build(size, 7)
            assert topology.neighbour_lists(size, 7) == [sorted(graph.neighbors(node)) for node in range(size)]


def test_a_graph_too_large_to_draw_is_sampled_around_one_agent() -> None:
    lists = Topology(kind="ring", degree=4).neighbour_lists(1_000_000, 0)
    nodes, edges = neighbourhood(lists, 1500)
    assert len(nodes) == 1500 and nodes[:3] == [0, 1, 2] and set(nodes) >= {999_998, 999_999}
    assert len(edges) == len(set(edges)) and all(a < b and a in nodes and b in nodes for a, b in edges)
    assert len(edges) == 2 * 1500 - 4  # a stretch of the ring: every edge inside it, none beyond


def test_a_run_that_kept_only_its_checkpoint_is_not_taken_over(tmp_path: Path) -> None:
    """At --record summary a run's progress is in its checkpoint alone: a fresh start into its
    directory is refused as for any run that recorded something (and --resume continues it)."""
    out = tmp_path / "out"
    _run(out, record="summary", in_flight=4, salt=None)
    connection = sqlite3.connect(out / "agentsim.db")
    connection.execute("UPDATE runs SET status = 'interrupted'")  # as a run killed mid-way leaves it
    connection.commit()
    connection.close()
    game = NamingGame(agents=300, pool_size=5, stop_at="none", max_rounds=6, max_in_flight=4)
    with pytest.raises(UserError, match="already holds results"):
        Experiment(ExperimentConfig(scenario=game, out=out, seed=3, record="summary"), Quiet()).open()
