"""Readers change nothing (issue 44, items 4, 6 and 9): every reader of a results directory
(report, transcript, bias, score, the other analysis commands, `agentsim.open` and its tables,
watch's reading, an import refused into it) leaves every file under it byte for byte as it was,
SQLite's side files included: after the run ended, beside a writer recording right now (paused
with SIGSTOP so that only the readers could change a byte), and after a writer killed with
SIGKILL left its `-wal` and `-shm`. A damaged store (a table or column missing, a value of the
wrong type, 0 bytes, another program's database) is refused in one line, exit 2, unchanged;
only a run or `--resume` writes, and `--resume` refuses a damaged store before touching it. A
signal during `report`, `score` or an import ends it with 130 / 143 and one line, never a
traceback, never a `-wal` or `-shm` left."""

from __future__ import annotations

import hashlib
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import ROOT, cli, cli_in_process
from test_gamabench import write_raw
from test_resume import recorded_rounds

import agentsim
from agentsim.errors import UserError
from agentsim.store import DATABASE
from agentsim.watch import Watcher

SCENARIO = str(ROOT / "scenarios" / "naming_game.py")
SETTINGS = ["--set", "agents=10", "--set", "stop_at=none", "--seed", "3", "--runs", "2", "--checkpoint-seconds", "0",
            "--no-live"]


def hashes(directory: Path) -> dict[str, str]:
    """Every file under `directory` (side files, the lock, report folders: all of them) by its SHA-256."""
    return {str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.rglob("*")) if path.is_file()}


def readers(directory: Path, elsewhere: Path) -> Iterator[tuple[str, Callable[[], object]]]:
    """(what, a call) for every way in that reads a results directory; what they write goes
    `elsewhere` where they take a place to write (report's and score's own output)."""
    where = str(directory)
    for arguments in (["report", where, "--out", str(elsewhere / "report")], ["transcript", where, "--run", "1"],
                      ["bias", where], ["strategies", where], ["score", where, "--out", str(elsewhere / "score.csv")],
                      ["cooperation", where], ["lineage", where], ["commons-transcript", where],
                      ["import", "gamabench", str(elsewhere), "--out", where],
                      ["import", "ainorms", str(elsewhere), "--out", where]):
        yield " ".join(arguments[:2]), lambda arguments=arguments: cli_in_process(*arguments)

    def tables() -> None:
        with agentsim.open(directory) as results:
            results.runs(), results.moves(situations=True), results.decisions(prompts=True), results.rounds()
            results.by_model(), results.experiment, results.summary()

    yield "agentsim.open", tables
    yield "watch", lambda: [Watcher(directory, min_interval_s=0).state() for _ in range(2)]


def assert_every_reader_changes_nothing(directory: Path, elsewhere: Path) -> None:
    elsewhere.mkdir(exist_ok=True)
    before = hashes(directory)
    for what, read in readers(directory, elsewhere):
        outcome = read()
        if isinstance(outcome, subprocess.CompletedProcess):
            assert outcome.returncode in (0, 2) and "Traceback" not in outcome.stderr, (what, outcome.stderr[-2000:])
        assert hashes(directory) == before, f"{what} changed {directory}"


def writer(out: Path, rounds: int = 100_000) -> subprocess.Popen[str]:
    """A run recording into `out`, once it has committed 20 rounds."""
    process = subprocess.Popen([sys.executable, "-m", "agentsim", SCENARIO, "--out", str(out), "--set",
                                f"max_rounds={rounds}", *SETTINGS], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 60
    while recorded_rounds(out / DATABASE) < 20:
        assert process.poll() is None and time.monotonic() < deadline, "the run ended before it could be read"
        time.sleep(0.02)
    return process


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "out"
    assert cli(SCENARIO, "--out", str(out), "--set", "max_rounds=30", *SETTINGS).returncode == 0
    return out


def test_every_reader_leaves_an_ended_run_byte_for_byte(finished: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    assert_every_reader_changes_nothing(out, tmp_path / "elsewhere")
    assert {path.name for path in out.iterdir()} == {path.name for path in finished.iterdir()}  # no -wal, no -shm


def test_every_reader_beside_a_writer_recording_now_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    process = writer(out)
    try:
        process.send_signal(signal.SIGSTOP)  # the writer holds the file, its -wal and -shm; only readers may act now
        assert (out / f"{DATABASE}-wal").is_file() and (out / f"{DATABASE}-shm").is_file()
        assert_every_reader_changes_nothing(out, tmp_path / "elsewhere")
        state = Watcher(out, min_interval_s=0).state()
        assert [run["rounds"] > 0 for run in state["experiments"][0]["runs"]] == [True, True]  # read beside it
    finally:
        process.send_signal(signal.SIGCONT)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        if process.stderr:
            process.stderr.close()


def test_every_reader_after_a_killed_writer_changes_nothing_and_reads_its_last_commit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    process = writer(out)
    process.kill()
    process.wait(timeout=30)
    if process.stderr:
        process.stderr.close()
    assert (out / f"{DATABASE}-wal").stat().st_size > 0 and (out / f"{DATABASE}-shm").is_file()
    committed = shutil.copytree(out, tmp_path / "committed")  # what a writer would find: SQLite recovers the -wal
    connection = sqlite3.connect(committed / DATABASE)
    rows = connection.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
    connection.close()
    assert_every_reader_changes_nothing(out, tmp_path / "elsewhere")
    with agentsim.open(out) as results:
        assert len(results.decisions()) == rows  # the killed writer's last commit, read from its -wal


def _drop(table: str) -> Callable[[sqlite3.Connection], None]:
    return lambda connection: connection.execute(f"DROP TABLE {table}")


DAMAGE: dict[str, tuple[Callable[[sqlite3.Connection], None], str]] = {
    **{f"table {table} dropped": (_drop(table), f"its table '{table}' is missing")
       for table in ("experiment", "runs", "agents", "encounters", "decisions", "rounds", "checkpoints")},
    "a column dropped": (lambda connection: connection.execute("ALTER TABLE decisions DROP COLUMN sampled_locally"),
                         "lacks its column sampled_locally"),
    "runs.seed text": (lambda connection: connection.execute("UPDATE runs SET seed = 'x' WHERE run = 1"),
                       "holds text in its column 'seed'"),
    "decisions.payoff text": (lambda connection: connection.execute("UPDATE decisions SET payoff = 'lots' WHERE t = 3"),
                              "holds text in its column 'payoff'"),
    "checkpoints.state NULL": (lambda connection: connection.execute("UPDATE checkpoints SET state = NULL WHERE run = 1"),
                               "holds nothing (NULL) in its column 'state'"),
    "store_version text": (lambda connection: connection.execute(
        "UPDATE experiment SET value = '\"six\"' WHERE key = 'store_version'"), "store_version"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_store_is_refused_by_every_reader_in_one_line_and_unchanged(finished: Path, tmp_path: Path,
                                                                              damage: str) -> None:
    """Dropping a table made `report` create it again and exit 0; a text seed was a bare ValueError."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    change, words = DAMAGE[damage]
    connection = sqlite3.connect(out / DATABASE)
    change(connection)
    connection.commit()
    connection.close()
    before = hashes(out)
    for arguments in (["report", str(out), "--out", str(tmp_path / "report")], ["transcript", str(out)], ["bias", str(out)],
                      ["--resume", "--out", str(out), "--no-live"]):
        result = cli_in_process(*arguments)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and words in lines[0], (damage, arguments, result.stderr[-1500:])
        assert hashes(out) == before, (damage, arguments)
    with pytest.raises(UserError, match=words.replace("(", r"\(").replace(")", r"\)")):
        agentsim.open(out)
    assert hashes(out) == before


@pytest.mark.parametrize("what", ["empty", "foreign", "no experiment"])
def test_an_empty_or_foreign_database_is_refused_and_unchanged(tmp_path: Path, what: str) -> None:
    """A 0-byte agentsim.db became 32 KiB when read; another program's database got agentsim's tables."""
    out = tmp_path / "out"
    out.mkdir()
    database = out / DATABASE
    if what == "empty":
        database.write_bytes(b"")
    else:
        connection = sqlite3.connect(database)
        connection.execute("CREATE TABLE customers (name TEXT)" if what == "foreign" else "PRAGMA user_version = 1")
        connection.commit()
        connection.close()
    before = hashes(out)
    words = {"empty": "is empty", "foreign": "did not create", "no experiment": "records no experiment"}[what]
    for arguments in (["report", str(out), "--out", str(tmp_path / "report")], ["transcript", str(out)], ["bias", str(out)]):
        result = cli_in_process(*arguments)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and words in lines[0], (what, arguments, result.stderr)
    with pytest.raises(UserError, match=words):
        agentsim.open(out)
    assert hashes(out) == before


def test_a_resume_of_a_store_without_its_runs_table_is_refused_before_anything_is_written(finished: Path,
                                                                                          tmp_path: Path) -> None:
    """`drop table runs` then `--resume` rewrote summary.json and runs.csv and ended with a
    UNIQUE constraint failure."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    connection = sqlite3.connect(out / DATABASE)
    connection.execute("DROP TABLE runs")
    connection.commit()
    connection.close()
    before = hashes(out)
    result = cli(SCENARIO, "--resume", "--out", str(out), "--set", "max_rounds=30", *SETTINGS)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "its table 'runs' is missing" in lines[0], result.stderr
    assert hashes(out) == before


# --- a signal during a reader or an import ----------------------------------------------------
CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


def blocked() -> None:
    """As a supervisor may start a process: a signal in its first milliseconds (before agentsim's
    first line takes them) waits for agentsim (tests/test_interrupt_any_moment.py)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def signalled(arguments: list[str], how: signal.Signals, after: float) -> tuple[int, str] | None:
    """The exit code and stderr of `python -m agentsim ARGUMENTS` sent `how` `after` seconds in;
    None if it had ended by then."""
    process = subprocess.Popen([sys.executable, "-m", "agentsim", *arguments], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, preexec_fn=blocked)
    time.sleep(after)
    if process.poll() is not None:
        process.communicate()
        return None
    process.send_signal(how)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


def moments(arguments: list[str], count: int) -> list[float]:
    """`count` moments spread over the command's run, from its imports to its last line."""
    began = time.monotonic()
    cli(*arguments, timeout=300)
    length = time.monotonic() - began
    return [0.05, 0.3, *(length * (index + 1) / (count + 1) for index in range(count))]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("command", ["report", "score"])
def test_a_signal_during_a_reader_is_one_line_and_leaves_no_side_file(finished: Path, tmp_path: Path,
                                                                      command: str) -> None:
    """It ended with 63 lines (ImportError: initialization failed) when the signal came as a module
    loaded, or exit 0 with the signal lost; an interrupted report left -wal and -shm."""
    out = tmp_path / "out"
    if command == "report":
        shutil.copytree(finished, out)
    else:
        assert cli("import", "gamabench", str(write_raw(tmp_path / "raw", runs=3)), "--out", str(out)).returncode == 0
    before = hashes(out)
    arguments = [command, str(out), "--out", str(tmp_path / ("report" if command == "report" else "score.csv"))]
    taken = 0
    for number, moment in enumerate(moments(arguments, 5)):
        how = (signal.SIGTERM, signal.SIGINT)[number % 2]
        outcome = signalled(arguments, how, moment)
        if outcome is None:
            continue
        taken += 1
        code, stderr = outcome
        lines = stderr.strip().splitlines()
        assert code == CODES[how] and len(lines) == 1 and "interrupted by" in lines[0], (moment, code, stderr[-3000:])
        assert hashes(out) == before, moment
    assert taken >= 4
