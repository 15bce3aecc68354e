"""The naming game on interaction networks: one experiment, one graph family per replicate.

Replicate k of an experiment runs on `topologies[k % len(topologies)]`, so
`--runs 30` with the six default families gives five runs of each, at equal N and (where the
family allows) equal mean degree: complete graph, ring, periodic 2-D lattice, Watts-Strogatz
small world, Barabási-Albert scale-free graph, and Erdős-Rényi random graph (redrawn until
connected, since a disconnected population cannot agree).

Agents meet along edges (the first agent drawn uniformly, its partner among its idle
neighbours). On sparse graphs a high success rate does not mean agreement (two domains on a
ring succeed almost everywhere), so this scenario measures convergence as agreement: the
first population round after which at least `agreement_threshold` of the agents' latest names
are the same, and stops there.

Works for any NamingGame subclass's agents; `agentsim.analysis.networks` draws the figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import networkx as nx

from ...model import PopulationModel
from ...params import require
from ...scheduler import Pairing, RoundPairing, SequentialPairing
from ...topology import Topology
from ...views import Stat, Views
from .game import NamingGame, NamingParams
from .metrics import ConventionMetrics
from .readout import NamingReadout

Network = Literal["complete", "ring", "lattice", "small-world", "scale-free", "erdos-renyi"]
NETWORKS: tuple[Network, ...] = ("complete", "ring", "lattice", "small-world", "scale-free", "erdos-renyi")


@dataclass(frozen=True, kw_only=True)
class NetworkNamingParams(NamingParams):
    # The graph comes from the family of each replicate, never from the naming game's own
    # topology settings: `--set topology=ring` is refused, naming `topologies`.
    unread: ClassVar[dict[str, str]] = {"topology": "topologies", "topology_degree": "mean_degree",
                                        "topology_probability": "rewiring", "topology_attachment": "mean_degree",
                                        "graph_file": "topologies"}

    topologies: tuple[Network, ...] = NETWORKS
    mean_degree: int = 4  # ring and small-world neighbours, 2 × Barabási-Albert edges, Erdős-Rényi mean
    rewiring: float = 0.1  # small-world rewiring probability
    agreement_threshold: float = 1.0
    pairing: Literal["sequential", "network", "rounds"] = "network"
    stop_at: Literal["consensus", "flip", "none"] = "consensus"

    def validate(self) -> None:
        super().validate()
        require(bool(self.topologies), "topologies must name at least one graph family")
        for kind in self.topologies:
            require(kind in NETWORKS, f"unknown topology '{kind}'; choose among {', '.join(NETWORKS)}")
        require(self.pairing != "sequential", "the network scenario pairs along edges: use pairing=network or rounds")
        require(0 < self.agreement_threshold <= 1, f"agreement_threshold must be in (0, 1] (got {self.agreement_threshold})")
        size = self.population_size()
        require(2 <= self.mean_degree < size and self.mean_degree % 2 == 0,
                f"mean_degree must be even and between 2 and agents-1 (got {self.mean_degree})")
        for kind in self.topologies:
            family_topology(kind, size, mean_degree=self.mean_degree, rewiring=self.rewiring).check(size)


def family_topology(kind: Network, size: int, *, mean_degree: int, rewiring: float = 0.1) -> Topology:
    """The Topology of a graph family with mean degree `mean_degree` (the 2-D lattice is 4
    whatever is asked; the complete graph is N-1)."""
    if kind == "erdos-renyi":
        return Topology(kind="erdos-renyi", probability=mean_degree / (size - 1))
    if kind == "scale-free":
        return Topology(kind="scale-free", attachment=mean_degree // 2)
    if kind == "ring" or kind == "small-world":
        return Topology(kind=kind, degree=mean_degree, probability=rewiring)
    return Topology(kind=kind)


def connected_graph(topology: Topology, size: int, seed: int, *, attempts: int = 200) -> nx.Graph:
    """The family's graph, redrawn (seed, seed+1, ...) until it is connected."""
    for attempt in range(attempts):
        graph = topology.build(size, seed + attempt)
        if nx.is_connected(graph):
            return graph
    require(False, f"{topology.kind} graphs with {size} nodes were never connected in {attempts} draws; raise mean_degree")
    raise AssertionError  # unreachable


class NetworkMetrics(ConventionMetrics):
    """Convention metrics plus the round at which agreement first reached the threshold."""

    agreement_round: int | None = None


class NetworkNamingGame(NamingGame):
    name = "network_naming_game"
    Params = NetworkNamingParams
    params: NetworkNamingParams

    def topology_of(self, model: PopulationModel) -> Network:
        topologies = self.params.topologies
        return topologies[model.replicate % len(topologies)]

    def pairing(self, model: PopulationModel) -> Pairing:
        params = self.params
        size = len(model.population)
        topology = family_topology(self.topology_of(model), size, mean_degree=params.mean_degree, rewiring=params.rewiring)
        graph = connected_graph(topology, size, model.random.getrandbits(32))
        model.graph = graph  # for summaries; rebuilt identically on resume
        return RoundPairing(graph) if params.pairing == "rounds" else SequentialPairing(params.max_in_flight, graph)

    def new_metrics(self, model: PopulationModel) -> NetworkMetrics:
        return NetworkMetrics(**self.convention_settings(model))

    def on_round_end(self, model: PopulationModel) -> None:
        metrics: NetworkMetrics = model.metrics
        if metrics.agreement_round is None and self._agreed(model):
            metrics.agreement_round = model.rounds_done

    def _agreed(self, model: PopulationModel) -> bool:
        metrics: NetworkMetrics = model.metrics
        everyone_spoke = len(metrics.current) == metrics.population
        return everyone_spoke and metrics.agreement >= self.params.agreement_threshold

    def stop_reason(self, model: PopulationModel) -> str | None:
        if self.params.stop_at == "consensus":
            return "agreement" if model.metrics.agreement_round is not None else None
        return super().stop_reason(model)

    def readout(self) -> NetworkReadout:
        return NetworkReadout(self)


class NetworkReadout(NamingReadout):
    """The naming game's readout, with the run's graph (family, mean degree, clustering) and
    the round its agents agreed."""

    game: NetworkNamingGame

    def run_summary(self, model: PopulationModel[None]) -> dict[str, Any]:
        metrics: NetworkMetrics = model.metrics
        graph: nx.Graph = model.graph
        degrees = [degree for _, degree in graph.degree()]
        return super().run_summary(model) | {
            "topology": self.game.topology_of(model),
            "mean_degree": round(sum(degrees) / len(degrees), 3),
            "clustering": round(nx.average_clustering(graph), 4),
            "agreement_round": metrics.agreement_round,
        }

    def views(self, model: PopulationModel[None], rounds: Mapping[int, Mapping[str, Any]]) -> Views:
        """The naming game's views, compared by topology (the run's `group`), with the graph's
        family, mean degree and the round its agents agreed (the paper's convergence time)."""
        metrics: NetworkMetrics = model.metrics
        graph: nx.Graph = model.graph
        topology = self.game.topology_of(model)
        degree = 2 * graph.number_of_edges() / max(graph.number_of_nodes(), 1)
        agreed = metrics.agreement_round
        stats = (Stat(label="topology", value=None, text=topology),
                 Stat(label="mean degree", value=degree, text=f"{degree:.1f}"),
                 Stat(label="agreement round", value=None if agreed is None else float(agreed),
                      text="not yet" if agreed is None else str(agreed)))
        shown = super().views(model, rounds)
        kept = tuple(stat for stat in shown.stats if stat.label != "consensus round")  # this study's criterion is agreement
        return replace(shown, group=topology, stats=stats + kept,
                       state=f"agreed at round {agreed}" if agreed is not None else shown.state)

    def model_series(self, model: PopulationModel[None]) -> dict[str, float | str | None]:
        """The naming game's series, with the run's topology and the round its agents agreed."""
        metrics: NetworkMetrics = model.metrics
        return super().model_series(model) | {
            "topology": self.game.topology_of(model),
            "agreement_round": float("nan") if metrics.agreement_round is None else float(metrics.agreement_round)}
