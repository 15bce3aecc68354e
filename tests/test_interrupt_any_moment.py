"""Issue 37 (8): SIGINT and SIGTERM at any moment of a command, from its start to its last line
(while Python imports agentsim, while the scenario file loads, during the start-up probe of a
model server, while the runs play, while the summary is written), end it with exit 130 / 143 and
one line: never a traceback, never a process killed without a word, never blamed on the scenario
file, never lost (a run that finishes "done" after the signal). The store is consistent after
every one, and `--resume` completes it into exactly what an uninterrupted run records.

The child is started with both signals blocked, as a supervisor may start a process: a signal
sent in the first milliseconds (while the interpreter itself starts, before agentsim's first
line runs) waits for agentsim to take it, instead of meeting Python's default handlers."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import ROOT, cli, dump
from servers import ServerThread, standin_server  # noqa: F401 (a fixture)

from agentsim.scenario_files import load_scenario

SCENARIO = str(ROOT / "scenarios" / "naming_game.py")
SETTINGS = ["--set", "agents=12", "--set", "stop_at=none", "--set", "max_rounds=40", "--seed", "4", "--runs", "2",
            "--checkpoint-seconds", "0", "--no-cache", "--no-live"]
CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
WORDS = {signal.SIGINT: "agentsim: interrupted by Ctrl-C", signal.SIGTERM: "agentsim: interrupted by SIGTERM"}


def blocked() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def signalled(arguments: list[str], how: signal.Signals, moment: float) -> tuple[int, str] | None:
    """The exit code and stderr of the command signalled `moment` seconds after its start;
    None if it had ended by then."""
    process = subprocess.Popen([sys.executable, "-m", "agentsim", *arguments], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, preexec_fn=blocked)
    time.sleep(moment)
    sent = process.poll() is None
    if sent:
        process.send_signal(how)
    _, stderr = process.communicate(timeout=120)
    return (process.returncode, stderr) if sent else None


# A run's usage counts the calls it made: those in flight when the signal came were sent, and are
# asked again on resume (their answers were never read), so they count twice, as they cost.
USAGE = {"calls", "prompt_tokens", "completion_tokens", "cost_usd", "cache_hits", "retries", "errors", "usage_by_backend"}


def recorded(out: Path) -> dict[str, list[tuple[object, ...]]]:
    """What the runs recorded (every move, decision, round and agent; each run's status and
    summary), without the usage counters."""
    rows = dump(out / "agentsim.db")
    rows["runs"] = [tuple(value if not (isinstance(value, str) and value.startswith("{")) else
                          json.dumps({key: item for key, item in json.loads(value).items() if key not in USAGE},
                                     sort_keys=True) for value in row) for row in rows["runs"]]
    return rows


def difference(expected: dict[str, list[tuple[object, ...]]], found: dict[str, list[tuple[object, ...]]]) -> str:
    """The first differing row of each table, to read in a failure."""
    shown = []
    for table in expected:
        pairs = [(row, other) for row, other in zip(expected[table], found[table]) if row != other]
        if pairs or len(expected[table]) != len(found[table]):
            shown.append(f"{table}: {len(expected[table])} vs {len(found[table])} rows; first differing {pairs[:1]}")
    return "; ".join(shown)


def consistent(out: Path) -> None:
    """A store, if the command made one, that SQLite finds whole, whose runs are each done or
    interrupted (never left `running`, never failed)."""
    database = out / "agentsim.db"
    if not database.exists():
        return
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        statuses = {status for (status,) in connection.execute("SELECT status FROM runs")}
    finally:
        connection.close()
    assert statuses <= {"done", "interrupted"}, statuses


@pytest.mark.timeout(600)
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_at_any_moment_gives_its_code_one_line_and_a_store_that_resumes(
        tmp_path: Path, how: signal.Signals, standin_server) -> None:
    server: ServerThread = standin_server(capacity=8, service_time_s=0.002)
    arguments = [SCENARIO, "--backend", f"tgi:{server.url}", *SETTINGS]
    whole = tmp_path / "whole"
    began = time.monotonic()
    assert cli(*arguments, "--out", str(whole), timeout=120).returncode == 0
    length = time.monotonic() - began
    reference = recorded(whole)
    draw = random.Random(f"issue-37-{how.name}")
    moments = [0.0, 0.005, 0.05, *sorted(draw.uniform(0, length) for _ in range(3))]
    taken = 0
    for number, moment in enumerate(moments):
        out = tmp_path / f"{how.name}-{number}"
        outcome = signalled([*arguments, "--out", str(out)], how, moment)
        if outcome is None:  # the command had ended: nothing to interrupt
            continue
        taken += 1
        code, stderr = outcome
        said = [line for line in stderr.splitlines() if "event=" not in line]
        assert code == CODES[how], f"at {moment:.3f} s: exit {code}\n{stderr}"
        assert len(said) == 1 and said[0].startswith(WORDS[how]), f"at {moment:.3f} s:\n{stderr}"
        assert "Traceback" not in stderr and "scenario file" not in stderr
        consistent(out)
        if (out / "agentsim.db").exists():  # what was recorded resumes into the uninterrupted run
            resumed = cli(*arguments, "--out", str(out), "--resume", timeout=120)
            if resumed.returncode == 2 and "records no experiment" in resumed.stderr:
                continue  # stopped before the experiment was recorded: nothing to resume, nothing lost
            assert resumed.returncode == 0, f"at {moment:.3f} s:\n{resumed.stderr}"
            resumed_rows = recorded(out)
            assert resumed_rows == reference, f"at {moment:.3f} s: {difference(reference, resumed_rows)}"
    assert taken >= len(moments) // 2


def test_a_scenario_file_that_raises_keyboardinterrupt_is_still_the_files_fault(tmp_path: Path) -> None:
    """The other side of the line: an interrupt the file raised itself, not a signal."""
    from agentsim.errors import ScenarioFileError

    file = tmp_path / "stops.py"
    file.write_text("raise KeyboardInterrupt\n")
    with pytest.raises(ScenarioFileError, match="stopped while loading"):
        load_scenario(file)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_start_up_probe(tmp_path: Path, how: signal.Signals, standin_server) -> None:
    """The first request (the start-up probe) held by a slow server: the signal comes while it
    waits for its answer."""
    server: ServerThread = standin_server(capacity=1, service_time_s=30.0)
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "agentsim", SCENARIO, "--backend", f"tgi:{server.url}", *SETTINGS,
                                "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while server.stats.requests < 1:
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read() if process.stderr else ""
        time.sleep(0.01)
    assert server.stats.answered == 0  # the probe is in flight
    process.send_signal(how)
    _, stderr = process.communicate(timeout=60)
    said = [line for line in stderr.splitlines() if "event=" not in line]
    assert process.returncode == CODES[how], stderr
    assert len(said) == 1 and said[0].startswith(WORDS[how]) and "Traceback" not in stderr, stderr
    consistent(out)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_scenario_file_loads_is_not_the_files_fault(tmp_path: Path, how: signal.Signals) -> None:
    """It was "scenario file ... stopped while loading (KeyboardInterrupt) ... fix the file", exit 2
    (SIGINT), or a process killed without a word (SIGTERM)."""
    loading = tmp_path / "loading"
    file = tmp_path / "slow.py"
    file.write_text(f"import pathlib, time\npathlib.Path({str(loading)!r}).touch()\ntime.sleep(60)\n"
                    f"from agentsim.games.naming import NamingGame\nscenario = NamingGame()\n")
    process = subprocess.Popen([sys.executable, "-m", "agentsim", str(file), "--no-live", "--out", str(tmp_path / "out")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not loading.exists():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(how)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == CODES[how], stderr
    assert stderr.strip().splitlines() == [f"{WORDS[how]}; it stopped before any run started; no run was recorded or "
                                           f"changed"], stderr


def test_a_signal_raised_where_python_cannot_pass_it_on_prints_nothing() -> None:
    """A SIGTERM that landed in a WeakKeyDictionary's callback printed "Exception ignored in"
    and a traceback before the command's one line (`report`, once in a few hundred signals)."""
    program = textwrap.dedent("""
        import weakref
        from agentsim import interrupts
        interrupts.install()

        class Held:
            pass

        def callback(_reference):
            raise interrupts.Interrupt(15)

        held = Held()
        reference = weakref.ref(held, callback)
        del held
        print("went on")
        """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "went on\n", "")
