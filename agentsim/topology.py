"""Interaction networks: who may meet whom. Built with networkx from the run's seed."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import networkx as nx

from .params import require

TopologyKind = Literal[
    "complete", "ring", "lattice", "small-world", "erdos-renyi", "scale-free", "random-regular", "file"
]


@dataclass(frozen=True, kw_only=True)
class Topology:
    """A graph family and its parameters. `degree` is the ring / small-world neighbour count
    and the random-regular degree; `probability` the small-world rewiring or Erdős–Rényi edge
    probability; `attachment` the Barabási–Albert edges per new node; `path` an edge list or a
    GraphML file (kind "file")."""

    kind: TopologyKind = "complete"
    degree: int = 4
    probability: float = 0.1
    attachment: int = 2
    path: str = ""

    def __post_init__(self) -> None:
        """What holds whatever the family: a value the chosen family does not read is still
        no silent typo (topology_degree=-2, a graph_file with another topology)."""
        require(self.degree >= 1, f"topology_degree must be at least 1 (got {self.degree})")
        require(0 <= self.probability <= 1, f"topology_probability must be in [0, 1] (got {self.probability})")
        require(self.attachment >= 1, f"topology_attachment must be at least 1 (got {self.attachment})")
        require(not self.path or self.kind == "file",
                f"graph_file is read with topology=file only (the topology is {self.kind}); add --set topology=file, "
                f"or drop graph_file")
        if self.kind == "file":
            require(bool(self.path), "topology 'file' needs graph_file=PATH (an edge list or .graphml)")
            require(Path(self.path).is_file(), f"graph file '{self.path}' not found; give an existing edge list or GraphML file")

    def check(self, size: int) -> None:
        """Raise ParameterError naming the fix if this graph cannot have `size` nodes."""
        require(size >= 2, f"a population needs at least 2 agents (got {size})")
        if self.kind in ("ring", "small-world"):
            require(2 <= self.degree < size and self.degree % 2 == 0,
                    f"topology_degree for a {self.kind} must be even and between 2 and agents-1 (got {self.degree})")
        if self.kind == "random-regular":
            require(0 < self.degree < size and (self.degree * size) % 2 == 0,
                    f"random-regular needs 0 < topology_degree < agents and degree × agents even (got {self.degree}, {size})")
        if self.kind in ("small-world", "erdos-renyi"):
            require(0 <= self.probability <= 1, f"topology_probability must be in [0, 1] (got {self.probability})")
        if self.kind == "scale-free":
            require(1 <= self.attachment < size, f"topology_attachment must be between 1 and agents-1 (got {self.attachment})")
        if self.kind == "lattice":
            require(lattice_shape(size)[0] >= 2,
                    f"a lattice needs agents = rows × columns with both at least 2; {size} is prime, try {size + 1}")

    def build(self, size: int, seed: int) -> nx.Graph:
        """The graph on nodes 0..size-1."""
        self.check(size)
        if self.kind == "complete":
            graph = nx.complete_graph(size)
        elif self.kind == "ring":
            graph = nx.watts_strogatz_graph(size, self.degree, 0.0, seed=seed)
        elif self.kind == "lattice":
            rows, columns = lattice_shape(size)
            graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(rows, columns, periodic=True), ordering="sorted")
        elif self.kind == "small-world":
            graph = nx.connected_watts_strogatz_graph(size, self.degree, self.probability, seed=seed)
        elif self.kind == "erdos-renyi":
            graph = nx.gnp_random_graph(size, self.probability, seed=seed)
        elif self.kind == "scale-free":
            graph = nx.barabasi_albert_graph(size, self.attachment, seed=seed)
        elif self.kind == "random-regular":
            graph = nx.random_regular_graph(self.degree, size, seed=seed)
        else:
            graph = read_graph(self.path)
            require(graph.number_of_nodes() == size,
                    f"graph file '{self.path}' has {graph.number_of_nodes()} nodes but agents={size}; set agents={graph.number_of_nodes()}")
        return graph


    def neighbour_lists(self, size: int, seed: int) -> list[list[int]]:
        """Each node's neighbours, sorted: what the scheduler draws partners from. The ring and
        the lattice are the graphs `build` makes, written down directly (no graph of a million
        nodes on the way: a tenth of the memory and of the time); the others from `build`."""
        self.check(size)
        if self.kind == "ring":
            half = self.degree // 2
            return [sorted({(node + step) % size for step in range(-half, half + 1) if step}) for node in range(size)]
        if self.kind == "lattice":
            rows, columns = lattice_shape(size)
            return [sorted({((row + down) % rows) * columns + (column + right) % columns
                            for down, right in ((-1, 0), (1, 0), (0, -1), (0, 1))} - {row * columns + column})
                    for row in range(rows) for column in range(columns)]
        graph = self.build(size, seed)
        return [sorted(graph.neighbors(node)) for node in range(graph.number_of_nodes())]


def lattice_shape(size: int) -> tuple[int, int]:
    """The most nearly square rows × columns factorisation of size."""
    rows = math.isqrt(size)
    while rows > 1 and size % rows:
        rows -= 1
    return rows, size // rows


def read_graph(path: str) -> nx.Graph:
    """An undirected graph from GraphML or a whitespace/comma separated edge list, relabelled
    0..n-1 in sorted order of the original labels."""
    file = Path(path)
    if file.suffix.lower() == ".graphml":
        graph = nx.Graph(nx.read_graphml(file))
    else:
        graph = nx.Graph()
        for line in file.read_text(encoding="utf-8").splitlines():
            fields = line.replace(",", " ").split()
            if len(fields) >= 2 and not line.lstrip().startswith("#"):
                graph.add_edge(fields[0], fields[1])
    try:
        order = sorted(graph.nodes, key=lambda node: (0, int(node)))
    except (TypeError, ValueError):
        order = sorted(graph.nodes, key=str)
    return nx.relabel_nodes(graph, {node: index for index, node in enumerate(order)})


def neighbourhood(neighbours: list[list[int]], limit: int, start: int = 0) -> tuple[list[int], list[tuple[int, int]]]:
    """What a page can draw of a graph too large to draw whole: up to `limit` agents around
    agent `start`, breadth first along `neighbours` (each agent's neighbours, sorted), and the
    edges among them, each once (a < b). A ring shows a stretch of it, a lattice a patch, a
    small world its shortcuts; agents are in the order reached, so the same graph gives the
    same sample. Costs `limit` agents' lists, whatever the population's size."""
    chosen = {start: None}
    frontier = [start]
    while frontier and len(chosen) < limit:
        reached = []
        for node in frontier:
            for other in neighbours[node]:
                if other not in chosen and len(chosen) < limit:
                    chosen[other] = None
                    reached.append(other)
        frontier = reached
    nodes = list(chosen)
    edges = [(node, other) for node in nodes for other in neighbours[node] if node < other and other in chosen]
    return nodes, edges
