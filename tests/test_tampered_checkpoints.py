"""A tampered results directory never crashes a resume (issue 37, items 2, 3 and 5): every
field of a real checkpoint mutated (its type, its range, its size, its nesting), the blob itself
(a decompression bomb, truncated, not zlib), and a run's summary of the wrong type each end
with one line naming the run, exit 2, and every file of the directory byte for byte as it was:
nothing is used or written before the whole checkpoint is checked."""

from __future__ import annotations

import base64
import copy
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import cli_in_process
from test_resume import SCENARIO, interrupt_midway, recorded_rounds

Mutation = Callable[[dict[str, Any]], Any]
OPTIONAL = {"reach", "state"}  # keys an earlier checkpoint of the same format lacks: 0, and "extra" or None


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real experiment stopped by Ctrl-C mid-run."""
    out = tmp_path_factory.mktemp("interrupted") / "out"
    code, stderr = interrupt_midway(out, "sequential", signal.SIGINT)
    assert code == 130, stderr
    return out


@pytest.fixture(scope="module")
def small_interrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small experiment stopped by Ctrl-C mid-run: a resume of it plays a second or so."""
    out = tmp_path_factory.mktemp("small") / "out"
    process = subprocess.Popen([sys.executable, "-m", "agentsim", SCENARIO, "--out", str(out), "--set", "agents=10",
                                "--set", "max_rounds=300", "--set", "stop_at=none", "--set", "pairing=sequential",
                                "--checkpoint-seconds", "0", "--no-live"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while recorded_rounds(out / "agentsim.db") < 20:
        assert process.poll() is None and time.monotonic() < deadline, "the run ended before it could be interrupted"
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130, process.stderr.read() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    return out


def _files(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() for path in sorted(directory.rglob("*"))
            if path.is_file() and path.name != ".agentsim.lock"}


def _document(out: Path) -> dict[str, Any]:
    connection = sqlite3.connect(out / "agentsim.db")
    blob = connection.execute("SELECT state FROM checkpoints WHERE run = 1").fetchone()[0]
    connection.close()
    return json.loads(zlib.decompress(blob))


def _store(out: Path, blob: bytes) -> None:
    connection = sqlite3.connect(out / "agentsim.db")
    connection.execute("UPDATE checkpoints SET state = ? WHERE run = 1", (blob,))
    connection.commit()
    connection.close()


def _other(value: Any) -> Any:
    """A value of another type than `value`."""
    return "x" if not isinstance(value, str) else 12345


def _mutations(state: dict[str, Any]) -> Iterator[tuple[str, Mutation]]:
    """(what, a change of the state's JSON) for every field: its type, its range, its size."""
    for key, value in state.items():
        if value is None:
            yield f"{key}: a list", lambda state, key=key: state.__setitem__(key, [1, 2])
            continue
        yield f"{key}: another type", lambda state, key=key, value=value: state.__setitem__(key, _other(value))
        yield f"{key}: an unknown class", lambda state, key=key: state.__setitem__(key, {"$": "o", "c": "os.system",
                                                                                       "v": {}})
        if key not in OPTIONAL:
            yield f"{key}: missing", lambda state, key=key: state.pop(key)
        if isinstance(value, int):
            yield f"{key}: negative", lambda state, key=key: state.__setitem__(key, -3)
            yield f"{key}: absurd", lambda state, key=key: state.__setitem__(key, 10**18)
        if isinstance(value, list) and value:
            yield f"{key}: shorter", lambda state, key=key: state.__setitem__(key, state[key][:-1])
            yield f"{key}: longer", lambda state, key=key: state.__setitem__(key, state[key] + state[key][-1:])
    yield "random: the issue's state", lambda state: state.__setitem__("random", [-7, [0], None])
    yield "random: a short generator", lambda state: state["random"]["v"][1]["v"].pop()
    yield "random: a word out of range", lambda state: state["random"]["v"][1]["v"].__setitem__(0, -1)
    yield "rng: a wrong generator", lambda state: state["rng"].__setitem__("bit_generator", "MT19937")
    yield "rng: a negative state", lambda state: state["rng"]["state"].__setitem__("state", -1)
    yield "rounds_done -3, completed 10**18", lambda state: state.update(rounds_done=-3, completed=10**18)
    yield "completed one more", lambda state: state.update(completed=state["completed"] + 1, time=state["time"] + 1)
    population = state["population"]  # the agents by column (agentsim/agents.py: population_state)
    for key, value in population.items():
        yield f"population {key}: another type", lambda state, key=key, value=value: state["population"].__setitem__(
            key, _other(value))
        yield f"population {key}: missing", lambda state, key=key: state["population"].pop(key)
    for key in ("encounters", "memory_sizes", "memory"):
        packed = base64.b64decode(population[key]["v"])
        for what, changed in (("one short", packed[:-packed[0]]), ("a byte more", packed + b"\x00"),
                              ("an unknown width", b"\x03" + packed[1:]),
                              ("a huge count", b"\x08" + (2**62).to_bytes(8, "little") * ((len(packed) - 1) // packed[0]))):
            yield f"population {key}: {what}", lambda state, key=key, changed=changed: state["population"][key].__setitem__(
                "v", base64.b64encode(changed).decode())
    for what, entry in (("text", "x"), ("numbers", {"$": "t", "v": [1, 2, 3]}),
                        ("too short", {"$": "t", "v": population["entries"][0]["v"][:-1]})):
        yield f"a remembered encounter: {what}", lambda state, entry=entry: state["population"]["entries"].append(entry)
    yield "population: an entry fewer than the memory points to", lambda state: state["population"]["entries"].pop()
    for name in ("metrics", "usage"):
        for key, value in state[name]["v"].items():
            if value is not None:
                yield f"{name}.{key}: another type", lambda state, name=name, key=key, value=value: (
                    state[name]["v"].__setitem__(key, _other(value)))
    usage = next(iter(state["usage"]["v"]["by_backend"].values()))["v"]
    for key, value in usage.items():
        yield f"usage of the backend .{key}: another type", lambda state, key=key, value=value: next(
            iter(state["usage"]["v"]["by_backend"].values()))["v"].__setitem__(key, _other(value))
    yield "pending: an entry of another shape", lambda state: state.update(pending=["x"], time=state["time"] + 1)
    yield "pending: an agent out of range", lambda state: state.update(
        pending=[{"$": "t", "v": [state["completed"], 0, {"$": "t", "v": [0, 10**6]}, None]}], time=state["time"] + 1)
    yield "pending: a record of another class", lambda state: state.update(
        pending=[{"$": "t", "v": [state["completed"], 0, {"$": "t", "v": [0, 1]}, None, state["usage"]]}],
        time=state["time"] + 1)
    yield "pending: an encounter already completed", lambda state: state.update(
        pending=[{"$": "t", "v": [0, 0, {"$": "t", "v": [0, 1]}, None]}], time=state["time"] + 1)


def _blobs(document: dict[str, Any]) -> Iterator[tuple[str, bytes]]:
    text = json.dumps(document)
    yield "truncated", zlib.compress(text.encode())[:-9]
    yield "not zlib", b"agentsim" * 10
    yield "zlib of a list", zlib.compress(b"[1, 2]")
    yield "trailing bytes", zlib.compress(text.encode()) + b"more"
    for depth in (500, 100_000):
        nested = text.replace('"stop_reason": null', '"stop_reason": ' + "[" * depth + "]" * depth)
        yield f"nested {depth} deep", zlib.compress(nested.encode())
    bomb = zlib.compressobj(9)
    chunks = [bomb.compress(b'{"checkpoint_format": 1, "state": "')]
    chunks.extend(bomb.compress(b"0" * 2**20) for _ in range(300))
    chunks.append(bomb.compress(b'"}') + bomb.flush())
    yield "a 300 MB bomb", b"".join(chunks)


def _cases(interrupted: Path) -> Iterator[tuple[str, bytes]]:
    document = _document(interrupted)
    for what, mutate in _mutations(document["state"]):
        changed = copy.deepcopy(document)
        mutate(changed["state"])
        yield what, zlib.compress(json.dumps(changed).encode())
    yield from _blobs(document)


def _assert_refused(out: Path, what: str, *expected: str) -> None:
    before = _files(out)
    result = cli_in_process("--resume", "--out", str(out), "--no-live")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, (what, result.returncode, result.stderr[-2000:])
    assert all(text in lines[0] for text in expected), (what, lines[0])
    assert _files(out) == before, f"{what}: a refused resume changed the directory"


def test_every_field_of_a_tampered_checkpoint_is_refused_in_one_line(interrupted: Path, tmp_path: Path) -> None:
    cases = list(_cases(interrupted))
    assert len(cases) > 60
    for number, (what, blob) in enumerate(cases):
        out = tmp_path / f"case{number}"
        shutil.copytree(interrupted, out)
        _store(out, blob)
        _assert_refused(out, what, "run 1", "--out")
        shutil.rmtree(out)


def test_the_untampered_checkpoint_resumes(interrupted: Path, tmp_path: Path) -> None:
    """The cases above are refused for their change: the same directory unchanged resumes."""
    out = tmp_path / "out"
    shutil.copytree(interrupted, out)
    assert cli_in_process("--resume", "--out", str(out), "--no-live").returncode == 0


@pytest.mark.parametrize("summary", ["[1, 2]", '"text"', "3"])
def test_a_run_summary_of_the_wrong_type_is_refused(interrupted: Path, tmp_path: Path, summary: str) -> None:
    """Item 5: a done run's summary that is not a mapping."""
    out = tmp_path / "out"
    shutil.copytree(interrupted, out)
    connection = sqlite3.connect(out / "agentsim.db")
    connection.execute("UPDATE runs SET status = 'done', summary = ? WHERE run = 2", (summary,))
    connection.commit()
    connection.close()
    _assert_refused(out, summary, "run 2", "--out")


def test_absurd_counters_are_refused(interrupted: Path, tmp_path: Path) -> None:
    """Item 3: `rounds_done=-3, completed=10**18` was resumed and the run marked done with a
    fraction of its encounters."""
    out = tmp_path / "out"
    shutil.copytree(interrupted, out)
    document = _document(out)
    document["state"].update(rounds_done=-3, completed=10**18)
    _store(out, zlib.compress(json.dumps(document).encode()))
    _assert_refused(out, "absurd counters", "run 1", "'completed'")


def test_a_store_linked_from_another_directory_is_refused(interrupted: Path, tmp_path: Path) -> None:
    """Item 4: the one-writer lock is the directory's, so a database reached through a link
    from a second directory would have two writers at once: refused, the target untouched."""
    target = tmp_path / "target"
    shutil.copytree(interrupted, target)
    before = _files(target)
    for how in ("symlink", "hard link"):
        linked = tmp_path / how.replace(" ", "_")
        linked.mkdir()
        if how == "symlink":
            (linked / "agentsim.db").symlink_to(target / "agentsim.db")
        else:
            (linked / "agentsim.db").hardlink_to(target / "agentsim.db")
        result = cli_in_process("--resume", "--out", str(linked), "--no-live")
        (line,) = result.stderr.strip().splitlines()
        assert result.returncode == 2 and "link" in line, (how, result.stderr)
    assert _files(target) == before


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every value inside a registered object's attributes (a list's first item)."""
    if isinstance(value, dict):
        items = value["v"].items() if value.get("$") == "o" else value.items() if "$" not in value else ()
        prefix = (*path, "v") if value.get("$") == "o" else path
        for key, item in items:
            yield (*prefix, key)
            yield from _leaves(item, (*prefix, key))
    elif isinstance(value, list) and value:
        yield (*path, 0)
        yield from _leaves(value[0], (*path, 0))


def _set(state: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        state = state[step]
    state[path[-1]] = value


@pytest.mark.timeout(900)
def test_every_nested_value_tampered_never_crashes_a_resume(small_interrupted: Path, tmp_path: Path) -> None:
    """Inside the metrics and the usage, every value of another type, negative or huge: a
    resume refuses it in one line (exit 2, the directory unchanged) or, where the change
    breaks nothing it checks, continues; it never ends in a traceback."""
    document = _document(small_interrupted)
    paths = [("metrics", *path) for path in _leaves(document["state"]["metrics"])]
    paths += [("usage", *path) for path in _leaves(document["state"]["usage"])]
    assert len(paths) > 30
    refused = 0
    for number, path in enumerate(paths):
        for replacement in ("x", -1, 10**6):
            changed = copy.deepcopy(document)
            _set(changed["state"], path, replacement)
            out = tmp_path / f"case{number}"
            shutil.copytree(small_interrupted, out)
            _store(out, zlib.compress(json.dumps(changed).encode()))
            before = _files(out)
            result = cli_in_process("--resume", "--out", str(out), "--no-live")
            lines = result.stderr.strip().splitlines()
            assert result.returncode in (0, 2), (path, replacement, result.stderr[-2000:])
            if result.returncode == 2:
                refused += 1
                assert len(lines) == 1 and "run 1" in lines[0], (path, replacement, lines)
                assert _files(out) == before, (path, replacement)
            shutil.rmtree(out)
    assert refused > len(paths)  # every type change at least
