"""The naming game on networks: the scenario runs every graph family and the analysis draws
them; sparse graphs slow convergence (ring slower than complete, in the theory baseline and
with the stand-in LLM agents)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from helpers import ROOT, run_experiment, run_model

from agentsim.errors import ParameterError
from agentsim.games.naming import NETWORKS, NetworkNamingGame
from agentsim.games.naming.network_report import network_section
from agentsim.games.theory import MinimalNamingGame, run_to_consensus
from agentsim.llm.standin import StandInModel
from agentsim.model import BackendShare, PopulationModel
from agentsim.scenario_files import load_scenario


def test_the_scenario_runs_each_topology_and_the_analysis_draws_them(tmp_path: Path) -> None:
    scenario, module = load_scenario(ROOT / "scenarios" / "network_topology.py")
    assert module.RUNS % len(NETWORKS) == 0
    quick = scenario.with_overrides({"agents": "16", "max_rounds": "30"})
    summaries = run_experiment(quick, tmp_path / "out", seed=1, runs=len(NETWORKS))
    assert [summary["topology"] for summary in summaries] == list(NETWORKS)
    assert all(summary["status"] == "done" for summary in summaries)
    complete = summaries[0]
    assert complete["mean_degree"] == 15 and complete["agreement_round"] is not None
    assert all(summary["mean_degree"] <= 4.5 for summary in summaries[1:])
    table = network_section(tmp_path / "out")
    assert [row.topology for row in table] == list(NETWORKS)
    report = tmp_path / "out" / "report"
    assert (report / "network_topology.png").stat().st_size > 10_000
    assert len((report / "network_topology.csv").read_text().splitlines()) == 1 + len(NETWORKS)
    assert len((report / "network_topology_summary.csv").read_text().splitlines()) == 1 + len(NETWORKS)


def test_the_ring_converges_slower_than_the_complete_graph_in_the_theory_baseline() -> None:
    """Fast kernel, N = 32: t_conv grows like N^3 on a ring against N^1.5 when everyone
    meets everyone, so already at this size the ring takes several times longer."""
    complete = [run_to_consensus(32, seed=s, max_interactions=10**6).t_conv for s in range(20)]
    ring = [run_to_consensus(32, seed=s, max_interactions=10**6, graph=nx.cycle_graph(32)).t_conv for s in range(20)]
    assert min(complete + ring) > 0
    assert np.mean(ring) > 4 * np.mean(complete)


def test_the_ring_converges_slower_than_the_complete_graph_in_the_scheduler() -> None:
    def converged_t(topology: str, seed: int) -> int:
        game = MinimalNamingGame(agents=16, invention="new", pairing="sequential" if topology == "complete" else "network",
                                 topology=topology, topology_degree=2, max_rounds=2000)
        return run_model(game, seed=seed).metrics.converged_t

    complete = [converged_t("complete", seed) for seed in range(8)]
    ring = [converged_t("ring", seed) for seed in range(8)]
    assert np.mean(ring) > 3 * np.mean(complete)


def test_the_ring_converges_slower_than_the_complete_graph_with_stand_in_agents() -> None:
    game = NetworkNamingGame(agents=16, pool_size=10, topologies=("complete", "ring"), max_rounds=300).for_experiment(0)

    def agreement_round(replicate: int) -> int:
        model = PopulationModel(game, seed=replicate, replicate=replicate,
                                backends=[BackendShare(StandInModel(game.standin_part().rules))])
        asyncio.run(model.arun())
        return model.metrics.agreement_round if model.metrics.agreement_round is not None else model.rounds_done

    complete = [agreement_round(replicate) for replicate in range(0, 12, 2)]
    ring = [agreement_round(replicate) for replicate in range(1, 12, 2)]
    assert np.median(ring) > 2 * np.median(complete)


@pytest.mark.parametrize(("settings", "message"), [
    ({"topologies": ("ring", "torus")}, "unknown topology 'torus'"),
    ({"mean_degree": 3}, "mean_degree must be even"),
    ({"agents": 23, "topologies": ("lattice",)}, "23 is prime"),
    ({"pairing": "sequential"}, "pairs along edges"),
])
def test_impossible_networks_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        NetworkNamingGame(**settings)  # type: ignore[arg-type]
