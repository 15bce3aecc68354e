"""The scheduler: no agent is ever in two encounters at once, under every pairing; the
sequence of random pairs gives the one-at-a-time run, move for move, whatever the order
answers come back in and however many are in flight; rounds give the same run whatever
order answers come back in."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers import JitteryStandIn, dump, run_experiment, run_model

from agentsim.games.naming import NamingGame
from agentsim.model import BackendShare, PopulationModel
from agentsim.scheduler import Encounter


class WatchedGame(NamingGame):
    """The naming game, checking that an agent whose encounter starts is in no other started
    one until that encounter resolves, and counting how many were asked at once."""

    def start(self, model: PopulationModel, encounter: Encounter) -> Any:
        busy = model.__dict__.setdefault("busy", set())
        for agent in encounter.agents:
            assert agent.index not in busy, f"agent {agent.index} started in t={encounter.t} while busy"
            busy.add(agent.index)
        model.__dict__["most_open"] = max(model.__dict__.get("most_open", 0), len(busy) // 2)
        model.__dict__["most_asked"] = max(model.__dict__.get("most_asked", 0), len(model.scheduler.running) + 1)
        return super().start(model, encounter)

    def resolve(self, model: PopulationModel, encounter: Encounter, answers: Any) -> Any:
        for agent in encounter.agents:
            model.busy.remove(agent.index)
        return super().resolve(model, encounter, answers)


@pytest.mark.parametrize(
    "settings",
    [
        {"pairing": "rounds"},
        {"pairing": "rounds", "topology": "ring", "topology_degree": 4},
        {"pairing": "sequential", "max_in_flight": 8},
        {"pairing": "sequential", "max_in_flight": 40},
        {"pairing": "network", "topology": "small-world", "max_in_flight": 8},
        {"pairing": "network", "topology": "scale-free", "max_in_flight": 12},
    ],
    ids=lambda settings: "-".join(str(value) for value in settings.values()),
)
def test_no_agent_is_in_two_encounters_at_once(settings: dict[str, Any]) -> None:
    game = WatchedGame(agents=40, pool_size=4, stop_at="none", max_rounds=15, **settings).for_experiment(3)
    model = run_model(game, seed=3, backend=JitteryStandIn(game.standin_part().rules))
    assert model.completed > 0
    assert model.most_open > 4, "the test must run encounters concurrently to mean anything"


def test_sequential_never_asks_more_than_max_in_flight() -> None:
    game = WatchedGame(agents=60, pool_size=4, stop_at="none", max_rounds=10, max_in_flight=5).for_experiment(1)
    model = run_model(game, seed=1, backend=JitteryStandIn(game.standin_part().rules))
    assert model.most_asked == 5


def test_rounds_match_every_agent_once_per_round() -> None:
    game = NamingGame(agents=30, pool_size=4, stop_at="none", max_rounds=6, pairing="rounds").for_experiment(2)
    model = run_model(game, seed=2)
    assert model.encounters_begun == 6 * 15
    assert all(agent.encounters == 6 for agent in model.population)


def test_network_pairs_are_graph_neighbours(tmp_path: Path) -> None:
    edges = tmp_path / "ring.edges"
    edges.write_text("\n".join(f"{i} {(i + 1) % 20}" for i in range(20)))
    game = NamingGame(agents=20, pool_size=4, stop_at="none", max_rounds=8, pairing="network", topology="file",
                      graph_file=str(edges))
    run_experiment(game, tmp_path / "out", seed=4)
    rows = dump(tmp_path / "out" / "agentsim.db", tables=("decisions",))["decisions"]
    by_t: dict[int, set[int]] = {}
    for row in rows:
        by_t.setdefault(row[1], set()).add(row[2])
    assert len(by_t) == 8 * 10
    for pair in by_t.values():
        first, second = sorted(pair)
        assert second - first in (1, 19), pair


def test_rounds_give_the_same_run_whatever_order_answers_arrive(tmp_path: Path) -> None:
    game = NamingGame(agents=30, pool_size=5, stop_at="consensus", max_rounds=40, pairing="rounds")
    run_experiment(game, tmp_path / "a", seed=11, backend=lambda scenario: JitteryStandIn(scenario.standin_part().rules, salt=1))
    run_experiment(game, tmp_path / "b", seed=11, backend=lambda scenario: JitteryStandIn(scenario.standin_part().rules, salt=2))
    first, second = dump(tmp_path / "a" / "agentsim.db"), dump(tmp_path / "b" / "agentsim.db")
    assert len(first["encounters"]) > 100
    assert first == second


def test_a_different_seed_gives_a_different_run(tmp_path: Path) -> None:
    game = NamingGame(agents=30, pool_size=5, stop_at="none", max_rounds=5, pairing="rounds")
    run_experiment(game, tmp_path / "a", seed=1)
    run_experiment(game, tmp_path / "b", seed=2)
    assert dump(tmp_path / "a" / "agentsim.db")["decisions"] != dump(tmp_path / "b" / "agentsim.db")["decisions"]


def _sequential_run(tmp_path: Path, name: str, *, backend: Any = None, **settings: Any) -> dict[str, Any]:
    game = NamingGame(agents=24, pool_size=5, stop_at="consensus", max_rounds=60, **settings)
    run_experiment(game, tmp_path / name, seed=7, backend=backend)
    return dump(tmp_path / name / "agentsim.db")


def test_sequential_run_is_the_one_at_a_time_run_whatever_the_concurrency(tmp_path: Path) -> None:
    """Answers that come back out of order with 1, 8 and 24 encounters in flight: the same
    run, row for row, stopping at the same consensus, having asked the same calls; and the
    same records as the in-process stand-in, which runs one encounter after another."""
    def jittery(salt: int) -> Any:
        return lambda scenario: JitteryStandIn(scenario.standin_part().rules, salt=salt)

    reference = _sequential_run(tmp_path, "jittery-1", max_in_flight=1, backend=jittery(1))
    assert len(reference["encounters"]) > 100
    assert reference["runs"][0][5] == "consensus"  # stopped by its own rule: the round past it is asked too
    for salt, in_flight in ((2, 8), (3, 24)):
        run = _sequential_run(tmp_path, f"jittery-{in_flight}", max_in_flight=in_flight, backend=jittery(salt))
        assert run == reference, f"max_in_flight={in_flight} changed the run"
    immediate = _sequential_run(tmp_path, "immediate")
    for table in ("agents", "encounters", "decisions", "rounds"):
        assert immediate[table] == reference[table], table


def test_network_sequence_is_the_one_at_a_time_run(tmp_path: Path) -> None:
    settings = {"pairing": "network", "topology": "small-world", "stop_at": "none", "max_rounds": 12}
    game = NamingGame(agents=30, pool_size=4, **settings)
    run_experiment(game, tmp_path / "a", seed=3)
    run_experiment(game.with_params(max_in_flight=30), tmp_path / "b", seed=3,
                   backend=lambda scenario: JitteryStandIn(scenario.standin_part().rules, salt=5))
    assert dump(tmp_path / "a" / "agentsim.db") == dump(tmp_path / "b" / "agentsim.db")


def test_partners_repeat_as_often_as_under_uniform_pairing(tmp_path: Path) -> None:
    """Under uniform random pairs an agent's next partner is its last one with probability
    1/(N-1) (4.3% at N 24); drawing among idle agents made it 20% with 12 in flight."""
    game = NamingGame(agents=24, pool_size=5, stop_at="none", max_rounds=80, max_in_flight=12)
    run_experiment(game, tmp_path / "out", seed=2,
                   backend=lambda scenario: JitteryStandIn(scenario.standin_part().rules, salt=9))
    rows = dump(tmp_path / "out" / "agentsim.db", tables=("decisions",))["decisions"]
    pairs: dict[int, set[int]] = {}
    for row in rows:
        pairs.setdefault(row[1], set()).add(row[2])
    last_partner: dict[int, int] = {}
    repeats = meetings = 0
    for t in sorted(pairs):
        first, second = sorted(pairs[t])
        for agent, partner in ((first, second), (second, first)):
            if agent in last_partner:
                meetings += 1
                repeats += last_partner[agent] == partner
            last_partner[agent] = partner
    assert meetings > 1500
    assert 0.02 < repeats / meetings < 0.07, repeats / meetings


class NeighbourGame(NamingGame):
    """The naming game, but each asked agent also sees the latest entry of the next agent's
    memory (another agent's state, named in `reads`)."""

    def reads(self, model: PopulationModel, encounter: Encounter) -> tuple[Any, ...]:
        return tuple(self._neighbour(model, agent) for agent in encounter.agents)

    def start(self, model: PopulationModel, encounter: Encounter) -> Any:
        views = super().start(model, encounter)
        return tuple(None if view is None else
                     view._replace(memory=view.memory + tuple(self._neighbour(model, agent).memory)[-1:])
                     for agent, view in zip(encounter.agents, views))

    @staticmethod
    def _neighbour(model: PopulationModel, agent: Any) -> Any:
        return model.scheduler.agents[(agent.index + 1) % len(model.scheduler.agents)]


def test_an_agent_read_from_another_encounter_is_read_as_of_its_place_in_the_sequence(tmp_path: Path) -> None:
    game = NeighbourGame(agents=20, pool_size=4, stop_at="none", max_rounds=15)
    run_experiment(game, tmp_path / "a", seed=6)
    run_experiment(game.with_params(max_in_flight=10), tmp_path / "b", seed=6,
                   backend=lambda scenario: JitteryStandIn(scenario.standin_part().rules, salt=4))
    first, second = dump(tmp_path / "a" / "agentsim.db"), dump(tmp_path / "b" / "agentsim.db")
    assert any(len(row[7] or "") > 4 + 2 * 5 for row in first["decisions"]), "prompts must show the neighbour's entry"
    assert first == second


def test_milestones_are_dated_in_sequence_order(tmp_path: Path) -> None:
    """The run stops at the encounter that reached consensus: it is the last one recorded,
    and its round is t // (N/2), the round that encounter belongs to in the sequence."""
    game = NamingGame(agents=24, pool_size=5, stop_at="consensus", max_rounds=60, max_in_flight=12)
    (summary,) = run_experiment(game, tmp_path / "out", seed=8,
                                backend=lambda scenario: JitteryStandIn(scenario.standin_part().rules, salt=3))
    encounters = dump(tmp_path / "out" / "agentsim.db", tables=("encounters",))["encounters"]
    last_t = max(row[1] for row in encounters)
    assert summary["consensus"] and summary["stop_reason"] == "consensus"
    assert summary["interactions"] == len(encounters) == last_t + 1
    assert summary["consensus_round"] == last_t // 12
    assert summary["final_agreement"] >= 0.95


def test_a_checkpoint_keeps_encounters_applied_ahead_of_the_record() -> None:
    """Between rounds, encounters of the next round may already be applied to their agents;
    a checkpoint keeps their records, and the resumed run records exactly what an
    uninterrupted one does."""
    import asyncio

    from agentsim import checkpoints
    from agentsim.model import BackendShare

    game = NamingGame(agents=24, pool_size=5, stop_at="none", max_rounds=10, max_in_flight=12).for_experiment(1)

    def fresh(records: list[Any]) -> PopulationModel:
        backend = JitteryStandIn(game.standin_part().rules, salt=2)
        return PopulationModel(game, seed=1, backends=[BackendShare(backend)], on_resolved=records.append)

    def plain(records: list[Any]) -> list[Any]:
        return [(record.t, record.outcome, [(move.agent, move.action) for move in record.moves]) for record in records]

    async def whole() -> list[Any]:
        records: list[Any] = []
        await fresh(records).arun()
        return plain(records)

    async def interrupted() -> tuple[list[Any], int]:
        records: list[Any] = []
        model = fresh(records)
        for _ in range(4):
            await model.astep()
        for _ in range(30):
            await asyncio.sleep(0)  # let the encounters ahead come back
        blob = model.checkpoint()
        await asyncio.gather(*model.scheduler.cancel(), return_exceptions=True)
        applied = sum(1 for item in checkpoints.loads(blob)["pending"] if item[4] is not None)
        resumed = fresh(records)
        await resumed.scheduler.resume(resumed.restore(blob))
        await resumed.arun()
        return plain(records), applied

    expected = asyncio.run(whole())
    got, applied = asyncio.run(interrupted())
    assert applied > 0, "the checkpoint must hold encounters applied ahead of the record to mean anything"
    assert got == expected


def test_sign_on_the_sequence_is_the_one_at_a_time_run(tmp_path: Path) -> None:
    """SIGN's lose-shift dice are drawn with the pair, its proposals read when it starts."""
    from agentsim.games.sign import SignGame

    game = SignGame(agents=12, lexicon_size=6, pairing="sequential", max_rounds=12, max_in_flight=6)
    run_experiment(game, tmp_path / "a", seed=2)
    run_experiment(game, tmp_path / "b", seed=2, backend=lambda scenario: JitteryStandIn(scenario.standin_part().rules, salt=7))
    first, second = dump(tmp_path / "a" / "agentsim.db"), dump(tmp_path / "b" / "agentsim.db")
    assert len(first["encounters"]) == 12 * 6
    for table in ("encounters", "decisions", "rounds"):
        assert first[table] == second[table], table


def test_the_encounter_counter_leaves_mesas_time_alone() -> None:
    """Mesa 3.4's `step()` advances `Model.time`: agentsim counts its encounters under its own
    name, so the two never overwrite each other."""
    model = run_model(NamingGame(agents=8, pool_size=5, stop_at="none", max_rounds=3))
    assert model.encounters_begun == 12  # 3 rounds of 4 pairs
    assert "time" not in vars(model)


class CountedStandIn(JitteryStandIn):
    """The jittery stand-in, counting what it is asked."""

    def __init__(self, rules: Any, salt: int = 0) -> None:
        super().__init__(rules, salt)
        self.asked = 0

    async def complete(self, request: Any) -> Any:
        self.asked += 1
        return await super().complete(request)


class DistanceWatched(NamingGame):
    """The naming game, noting its stop bound after every record: (records so far, bound)."""

    def stop_distance(self, model: PopulationModel, limit: int) -> int:
        distance = super().stop_distance(model, limit)
        model.__dict__.setdefault("distances", []).append((model.completed, distance))
        return distance


@pytest.mark.parametrize("stop", ["consensus", "flip"])
def test_a_run_that_stops_asks_few_encounters_past_its_stop(stop: str) -> None:
    """The look-ahead narrows as the stop rule comes within reach: the bound is never past the
    stop it bounds, the encounters asked past the stop are at most 1/80 of the run's (a full
    population round before), and the run is the one-at-a-time run, asking the same calls
    whatever the order answers come back in."""
    settings: dict[str, Any] = {"agents": 40, "max_rounds": 80, "stop_at": stop}
    if stop == "flip":
        settings.update(names=("Q", "M"), memory_length=5, majority_name="M", committed_name="Q", committed=10)
    else:
        settings.update(pool_size=5)
    runs = []
    for salt, in_flight in ((1, 1), (2, 40)):
        game = DistanceWatched(**settings, max_in_flight=in_flight).for_experiment(3)
        backend = CountedStandIn(game.standin_part().rules, salt=salt)
        records: list[Any] = []
        model = PopulationModel(game, seed=3, backends=[BackendShare(backend)], on_resolved=records.append)
        asyncio.run(model.arun())
        runs.append((model, backend.asked, [(record.t, [(move.agent, move.action) for move in record.moves])
                                            for record in records]))
    (serial, serial_asked, serial_records), (model, asked, moves) = runs
    assert model.stop_reason == stop and model.completed > 200
    stopped = model.completed  # t* + 1
    assert all(done + distance <= stopped for done, distance in model.distances if distance < model.round_size)
    assert any(distance < model.round_size for _, distance in model.distances), "the bound must have narrowed"
    assert model.encounters_begun - stopped <= max(1, stopped // 80)
    assert moves == serial_records and asked == serial_asked
    assert serial.encounters_begun == model.encounters_begun
