"""Checkpoints are plain data (agentsim/checkpoints.py): what JSON cannot say survives the
round trip, registered classes come back as themselves, and anything else is refused on
both sides; a blob of another format (an older agentsim's pickle) is never unpickled."""

from __future__ import annotations

import collections
import dataclasses
import enum
import math
import pickle
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from helpers import scenario_files

from agentsim import checkpoints
from agentsim.checkpoints import CheckpointError


@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    name: str
    at: tuple[int, int]


@dataclasses.dataclass
class Mutable:
    counts: dict[int | None, int]
    tags: set[str] = dataclasses.field(default_factory=set)


class Entry(NamedTuple):
    own: str
    partner: str | None
    payoff: int


class Colour(enum.Enum):
    RED = 1


class Plain:
    def __init__(self) -> None:
        self.window: collections.deque[int] = collections.deque([1, 2], maxlen=3)
        self.entries = [Entry("Q", None, 100)]


class Slotted:
    __slots__ = ("total", "values")

    def __init__(self) -> None:
        self.total = 3
        self.values = [1, 2]


class Unregistered:
    pass


checkpoints.register(Frozen, Mutable, Entry, Colour, Plain, Slotted)


def round_trip(value: Any) -> Any:
    return checkpoints.loads(checkpoints.dumps(value))


def test_what_json_cannot_say_survives() -> None:
    value = {
        "tuple": (1, (2, "x")), "set": {3, 1}, "frozen": frozenset({"a"}), "keys": {1: "one", None: "none", (2, 3): 5},
        "dollar": {"$": "not a tag"}, "floats": [math.inf, -math.inf, 0.5], "bytes": b"\x00\xff",
        "deque": collections.deque([1, 2, 3], maxlen=5), "counter": collections.Counter({"Q": 2, None: 1}),
        "big": 2**127 + 1, "bool": [True, False, None],
    }
    back = round_trip(value)
    assert back == value
    assert type(back["tuple"]) is tuple and type(back["tuple"][1]) is tuple
    assert type(back["frozen"]) is frozenset and type(back["counter"]) is collections.Counter
    assert back["deque"].maxlen == 5
    assert math.isnan(round_trip(math.nan))


def test_registered_classes_come_back_as_themselves() -> None:
    value = [Frozen("x", (1, 2)), Mutable({None: 1, 2: 3}, {"b", "a"}), Entry("Q", None, -50), Colour.RED, Plain(),
             Slotted()]
    frozen, mutable, entry, colour, plain, slotted = round_trip(value)
    assert frozen == Frozen("x", (1, 2)) and mutable == Mutable({None: 1, 2: 3}, {"a", "b"})
    assert entry == Entry("Q", None, -50) and type(entry) is Entry and colour is Colour.RED
    assert type(plain) is Plain and plain.window == collections.deque([1, 2], maxlen=3)
    assert plain.entries == [Entry("Q", None, 100)]
    assert type(slotted) is Slotted and (slotted.total, slotted.values) == (3, [1, 2])


def test_the_same_state_gives_the_same_bytes() -> None:
    assert checkpoints.dumps({"set": {"b", "a", "c"}}) == checkpoints.dumps({"set": {"c", "a", "b"}})


def test_an_unregistered_class_is_refused_both_ways() -> None:
    with pytest.raises(TypeError, match="register the class"):
        checkpoints.dumps({"x": Unregistered()})
    blob = zlib.compress(b'{"checkpoint_format":1,"state":{"$":"o","c":"os.system","v":{}}}')
    with pytest.raises(CheckpointError, match="does not know"):
        checkpoints.loads(blob)


LAZY_MODULE = """
import dataclasses

@dataclasses.dataclass
class Lazy:
    value: int
"""


def test_a_class_registered_by_name_is_imported_when_a_checkpoint_first_holds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A family names its state "module:Class" so that registering imports nothing; reading a
    checkpoint that holds one imports that module (only a module so named: a checkpoint naming
    another still runs nothing), and writing one finds the name."""
    import sys

    (tmp_path / "lazy_state_for_checkpoints.py").write_text(LAZY_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    checkpoints.register_lazily("lazy_state_for_checkpoints:Lazy")
    assert "lazy_state_for_checkpoints" not in sys.modules  # registering imported nothing
    blob = zlib.compress(b'{"checkpoint_format":1,"state":{"$":"o","c":"lazy_state_for_checkpoints.Lazy","v":{"value":3}}}')
    state = checkpoints.loads(blob)
    assert type(state).__name__ == "Lazy" and state.value == 3
    assert checkpoints.loads(checkpoints.dumps([state])) == [state]
    (tmp_path / "lazy_state_unnamed.py").write_text(LAZY_MODULE, encoding="utf-8")
    with pytest.raises(CheckpointError, match="does not know"):
        checkpoints.loads(zlib.compress(b'{"checkpoint_format":1,"state":{"$":"o","c":"lazy_state_unnamed.Lazy","v":{}}}'))
    assert "lazy_state_unnamed" not in sys.modules


def test_a_class_registered_by_name_is_found_when_written_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lazy_state_written_first.py").write_text(LAZY_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    checkpoints.register_lazily("lazy_state_written_first:Lazy")
    from lazy_state_written_first import Lazy  # type: ignore[import-not-found]  # the game made one before any checkpoint

    assert checkpoints.loads(checkpoints.dumps({"x": Lazy(value=5)})) == {"x": Lazy(value=5)}


class _Marker:
    """Unpickling it creates a file: the proof that something ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path.touch, (self.path,))


def test_a_pickled_checkpoint_is_refused_and_never_unpickled(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    blob = zlib.compress(pickle.dumps({"state": _Marker(marker)}))
    with pytest.raises(CheckpointError, match="another format") as raised:
        checkpoints.loads(blob)
    assert raised.value.incompatible
    assert not marker.exists()


def test_a_class_whose_fields_changed_is_refused() -> None:
    blob = zlib.compress(b'{"checkpoint_format":1,"state":{"$":"o","c":"%s","v":{"name":"x"}}}'
                         % f"{Frozen.__module__}.{Frozen.__qualname__}".encode())
    with pytest.raises(CheckpointError, match="other fields"):
        checkpoints.loads(blob)


def test_another_format_and_damage_are_told_apart() -> None:
    with pytest.raises(CheckpointError, match="format 7") as newer:
        checkpoints.loads(zlib.compress(b'{"checkpoint_format":7,"state":null}'))
    assert newer.value.incompatible
    with pytest.raises(CheckpointError) as damaged:
        checkpoints.loads(checkpoints.dumps([1, 2, 3])[:10])
    assert not damaged.value.incompatible
    with pytest.raises(CheckpointError, match="malformed"):
        checkpoints.loads(zlib.compress(b'{"checkpoint_format":1,"state":{"$":"f","v":"1e999"}}'))


SCENARIO_FILES = scenario_files()


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda path: path.name)
def test_every_scenario_files_state_goes_through_a_checkpoint(path: Path) -> None:
    """Two rounds of each scenario file on a stand-in whose answers interleave, then its
    checkpoint into a fresh model: every class of its state is registered, and the state read
    back writes the same checkpoint (calls in flight, a live count, aside)."""
    import asyncio

    from helpers import JitteryStandIn

    from agentsim.model import BackendShare, PopulationModel
    from agentsim.scenario_files import load_scenario

    scenario = load_scenario(path)[0].for_experiment(1)
    backend = JitteryStandIn(scenario.standin_part().rules)

    def fresh() -> PopulationModel:
        return PopulationModel(scenario, seed=1, backends=[BackendShare(backend)])

    async def round_trip() -> tuple[Any, Any]:
        model = fresh()
        for _ in range(2):
            if not model.finished:
                await model.astep()
        blob = model.checkpoint()
        await asyncio.gather(*model.scheduler.cancel(), return_exceptions=True)
        again = fresh()
        await again.scheduler.resume(again.restore(blob))
        return _without_in_flight(checkpoints.loads(blob)), _without_in_flight(checkpoints.loads(again.checkpoint()))

    written, rewritten = asyncio.run(round_trip())
    assert rewritten == written


def _without_in_flight(state: dict[str, Any]) -> Any:
    """The state as data, calls in flight at the checkpoint not counted (a restore starts at 0)."""
    for usage in state["usage"].by_backend.values():
        usage.in_flight = 0
    return checkpoints.encode(state)


def test_a_checkpoint_from_before_model_state_reads_its_run_state_from_extra() -> None:
    """Checkpoints written before `model.state` kept a scenario's run state (evolution's order
    and advice) under "extra": it is read as the state, and the run goes on as written."""
    import asyncio

    from agentsim.games.evolution import DonorGame
    from agentsim.model import PopulationModel

    scenario = DonorGame(agents=4, rounds=2, generations=2, games=1)

    async def resumed() -> tuple[Any, Any]:
        model = PopulationModel(scenario, seed=5)
        for _ in range(4):
            await model.astep()
        assert model.state.order, "the game's order is drawn by now"
        state = checkpoints.loads(model.checkpoint())
        state["extra"] = state.pop("state")
        again = PopulationModel(scenario, seed=5)
        await again.scheduler.resume(again.restore(checkpoints.dumps(state)))
        return model.state, again.state

    written, read = asyncio.run(resumed())
    assert read == written
