"""Interaction graphs: every family builds on the requested nodes, and impossible ones are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from agentsim.errors import ParameterError
from agentsim.topology import Topology, lattice_shape


@pytest.mark.parametrize(
    ("topology", "degrees"),
    [
        (Topology(kind="complete"), {23}),
        (Topology(kind="ring", degree=4), {4}),
        (Topology(kind="lattice"), {4}),
        (Topology(kind="random-regular", degree=3), {3}),
        (Topology(kind="small-world", degree=4, probability=0.2), None),
        (Topology(kind="erdos-renyi", probability=0.3), None),
        (Topology(kind="scale-free", attachment=2), None),
    ],
    ids=lambda value: value.kind if isinstance(value, Topology) else "",
)
def test_graphs_have_the_requested_nodes(topology: Topology, degrees: set[int] | None) -> None:
    graph = topology.build(24, seed=1)
    assert sorted(graph.nodes) == list(range(24))
    if degrees is not None:
        assert {degree for _, degree in graph.degree} == degrees
    assert topology.build(24, seed=1).edges == graph.edges  # seeded


def test_small_world_is_connected_and_scale_free_has_hubs() -> None:
    assert nx.is_connected(Topology(kind="small-world", degree=4, probability=0.3).build(100, seed=2))
    degrees = sorted((degree for _, degree in Topology(kind="scale-free").build(200, seed=2).degree), reverse=True)
    assert degrees[0] >= 4 * degrees[len(degrees) // 2]


def test_graph_files(tmp_path: Path) -> None:
    edges = tmp_path / "g.csv"
    edges.write_text("# a triangle and a tail\na,b\nb,c\nc,a\nc,d\n")
    graph = Topology(kind="file", path=str(edges)).build(4, seed=0)
    assert graph.number_of_edges() == 4 and sorted(graph.nodes) == [0, 1, 2, 3]
    graphml = tmp_path / "g.graphml"
    nx.write_graphml(nx.cycle_graph(5), graphml)
    assert Topology(kind="file", path=str(graphml)).build(5, seed=0).number_of_edges() == 5
    with pytest.raises(ParameterError, match="has 5 nodes but agents=6; set agents=5"):
        Topology(kind="file", path=str(graphml)).build(6, seed=0)


@pytest.mark.parametrize(
    ("topology", "size", "message"),
    [
        ({"kind": "ring", "degree": 3}, 10, "must be even"),
        ({"kind": "random-regular", "degree": 3}, 9, "degree × agents even"),
        ({"kind": "lattice"}, 13, "13 is prime"),
        ({"kind": "erdos-renyi", "probability": 2.0}, 10, "topology_probability must be in"),
        ({"kind": "file", "path": "nowhere.edges"}, 10, "not found"),
        ({"kind": "complete", "degree": -2}, 10, "topology_degree must be at least 1"),
        ({"kind": "complete", "path": "graph.edges"}, 10, "graph_file is read with topology=file only"),
    ],
)
def test_impossible_graphs_are_refused(topology: dict[str, Any], size: int, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        Topology(**topology).build(size, seed=0)


def test_lattice_shape_is_as_square_as_possible() -> None:
    assert lattice_shape(24) == (4, 6) and lattice_shape(100) == (10, 10)
