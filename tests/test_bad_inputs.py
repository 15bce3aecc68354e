"""Every bad input the issues list ends with one line naming the fix and exit code 2 (a dead
backend: 3, as a failed backend always does), and leaves nothing behind that would block a
rerun; a damaged database or checkpoint, a foreign
SQLite file, and a directory another agentsim is writing are refused before anything in them
changes."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import ROOT, cli, cli_in_process
from test_cli import assert_user_error

from agentsim.runner import DirectoryLock

NAMING = str(ROOT / "scenarios" / "naming_game.py")
QUICK = ("--set", "agents=8", "--set", "max_rounds=3", "--no-live")


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "scenario.py"
    path.write_text(text)
    return str(path)


FLAG_CASES = [
    (("--seed", "-5"), ("--seed must be a whole number from 0",)),
    (("--seed", str(2**70)), ("--seed must be a whole number from 0",)),
    (("--timeout", "inf"), ("argument --timeout: 'inf' is not a finite number",)),
    (("--timeout", "nan"), ("argument --timeout: 'nan' is not a finite number",)),
    (("--timeout", "0"), ("--timeout must be a number of seconds",)),
    (("--deadline", "inf"), ("argument --deadline: 'inf' is not a finite number",)),
    (("--checkpoint-seconds", "nan"), ("argument --checkpoint-seconds: 'nan' is not a finite number",)),
    (("--checkpoint-seconds", "inf"), ("argument --checkpoint-seconds: 'inf' is not a finite number",)),
    (("--rpm", "nan"), ("argument --rpm: 'nan' is not a finite number",)),
    (("--tpm=-inf",), ("argument --tpm: '-inf' is not a finite number",)),
    (("--rpm", "0"), ("--rpm must be a finite number > 0",)),
    (("--max-cost", "nan"), ("argument --max-cost: 'nan' is not a finite number",)),
    (("--max-failure-share", "inf"), ("argument --max-failure-share: 'inf' is not a finite number",)),
    (("--max-fallback-share", "1.5"), ("--max-fallback-share must be a share",)),
    (("--set", "consensus_threshold=nan"), ("consensus_threshold must be a finite number",)),
    (("--set", "consensus_window=inf"), ("consensus_window must be a finite number",)),
    (("--set", "temperature=-inf"), ("temperature must be a finite number",)),
    (("--set", "agents=100000000"), ("agents=100000000 is more than one run can hold", "at most 100000")),
    (("--runs", "100000"), ("--runs must be between 1 and 10000",)),
    (("--backend", "stand-in", "--population", "stand-in:a=8"), ("--backend and --population",)),
    (("--max-calls", "10"), ("the stand-in answers in process",)),
    (("--set", "standin.bias=2"), ("standin.bias must be in [0, 1] (got 2.0)",)),
    (("--set", "standin.colour=red"), ("unknown stand-in setting 'standin.colour'", "standin.noise")),
    (("--set", "standin_noise=0.1"), ("the stand-in's settings are set as standin.KEY=VALUE", "standin.noise")),
    # issue 27: tracebacks, values wrongly accepted, messages that blamed something else
    (("--backend", "openai:m@http://[::1"), ("'http://[::1' is not a URL",)),
    (("--backend", "openai:m@http://127.0.0.1:80:80/v1"), ("is not a URL", "http://HOST:PORT")),
    (("--backend", "tgi:http://127.0.0.1:80:80"), ("is not a URL",)),
    (("--base-url", "http://[::1", "--backend", "openai:m"), ("--base-url", "is not a URL")),
    (("--set", "temperature=1e308"), ("temperature must be between 0 and 2",)),
    (("--set", "temperature=1_0"), ("temperature must be a number (got '1_0')",)),
    (("--set", "agents=2_4"), ("agents must be a whole number (got '2_4')",)),
    (("--timeout", "1_0"), ("'1_0' is not a number",)),
    (("--set", "max_tokens=1000000000000"), ("max_tokens must be between 1 and 1,000,000",)),
    (("--set", "graph_file=/nonexistent"), ("graph_file is read with topology=file only",)),
    (("--set", "topology_degree=-2"), ("topology_degree must be at least 1",)),
    (("--backend", ""), ("--backend is empty",)),
    (("--population", ""), ("--population is empty",)),
    (("--base-url", "http://127.0.0.1:9/v1"), ("--base-url is for openai: and anthropic: backends",)),
    (("--runs", str(10**20)), ("--runs must be between 1 and 10000",)),
]


@pytest.mark.parametrize(("arguments", "fragments"), FLAG_CASES, ids=lambda value: " ".join(value))
def test_each_bad_flag_is_one_line_exit_2_and_leaves_nothing(tmp_path: Path, arguments: tuple[str, ...],
                                                              fragments: tuple[str, ...]) -> None:
    out = tmp_path / "out"
    assert_user_error(cli_in_process(NAMING, "--out", str(out), *QUICK, *arguments), *fragments)
    assert not out.exists(), "a refused run leaves no directory behind"


def test_a_bad_flag_is_one_line_and_exit_2_from_the_command_itself(tmp_path: Path) -> None:
    """The cases above run `main` in process; one goes through `python -m agentsim`."""
    out = tmp_path / "out"
    assert_user_error(cli(NAMING, "--out", str(out), *QUICK, *FLAG_CASES[0][0]), *FLAG_CASES[0][1])
    assert not out.exists()


def test_an_empty_out_is_refused_and_writes_nowhere(tmp_path: Path) -> None:
    """`--out ''` meant the current directory."""
    assert_user_error(cli(NAMING, "--out", "", *QUICK), "--out is empty")
    assert not any(tmp_path.iterdir()), "something was written into the current directory"


SCENARIO_FILE_CASES = [
    ("VARIANTS = 5", ("VARIANTS must be a list of dicts", "got 5")),
    ("VARIANTS = 'agents=4'", ("VARIANTS must be a list of dicts",)),
    ("VARIANTS = [{'memory_length': 'x'}]", ("memory_length must be a whole number (got 'x')",)),
    ("VARIANTS = [{'names': ['Q', 7]}]", ("names must be a list of text",)),
    ("POPULATION = 7", ("POPULATION must be text", "got 7")),
    ("raise KeyboardInterrupt", ("stopped while loading (KeyboardInterrupt)", "must not exit")),
    ("raise SystemExit('no thanks')", ("stopped while loading (SystemExit: no thanks)",)),
    ("import sys\nsys.exit(0)", ("stopped while loading (SystemExit)",)),
]


@pytest.mark.parametrize(("line", "fragments"), SCENARIO_FILE_CASES, ids=[case[0] for case in SCENARIO_FILE_CASES])
def test_each_bad_scenario_file_is_one_line_exit_2_and_leaves_nothing(tmp_path: Path, line: str,
                                                                      fragments: tuple[str, ...]) -> None:
    scenario = _file(tmp_path, f"from agentsim.games.naming import NamingGame\nscenario = NamingGame()\n{line}\n")
    out = tmp_path / "out"
    assert_user_error(cli(scenario, "--out", str(out), *QUICK), *fragments)
    assert not out.exists()


def _corrupt(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)


def _foreign(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE customers (name TEXT)")
    connection.commit()
    connection.close()


@pytest.mark.parametrize(("make", "fragment"), [(_corrupt, "is damaged or not a database"),
                                                (_foreign, "is an SQLite database agentsim did not create")], ids=["corrupt", "foreign"])
def test_a_cache_that_is_not_agentsims_is_named_as_the_cache(tmp_path: Path, make: Callable[[Path], None],
                                                             fragment: str) -> None:
    """It was reported as "cannot write the output directory", or failed mid-run with "free space"."""
    cache = tmp_path / "cache.db"
    make(cache)
    before = cache.read_bytes()
    out = tmp_path / "out"
    assert_user_error(cli(NAMING, "--backend", "tgi:http://127.0.0.1:9", "--cache", str(cache), "--out", str(out),
                          *QUICK), f"the response cache {cache} {fragment}", "--cache PATH")
    assert cache.read_bytes() == before and not out.exists()


def test_a_dead_backend_in_the_analysis_commands_is_one_line(tmp_path: Path) -> None:
    """They printed BackendFailedError's traceback; now the run's one line and its exit code (3, as the main command)."""
    from servers import closed_port

    dead = f"tgi:http://127.0.0.1:{closed_port()}"
    for arguments in (("unbiased-pool", "--backend", dead, "--samples", "10", "--tries", "1"),
                      ("critical-mass", str(ROOT / "scenarios" / "critical_mass_search.py"), "--backend", dead,
                       "--out", str(tmp_path / "search"), "--runs", "1")):
        result = cli(*arguments, timeout=120)
        assert result.returncode == 3, result.stderr
        *progress, line = result.stderr.strip().splitlines()  # (a search says which size it tries first)
        assert all(earlier.startswith("critical-mass: against") for earlier in progress), progress
        assert line.startswith(f"agentsim {arguments[0]}: failed: backend ") and "start-up probe" in line, line


def test_float_flags_of_the_subcommands_are_finite(tmp_path: Path) -> None:
    result = cli("unbiased-pool", "--threshold", "nan", "--out", str(tmp_path / "pool"))
    assert result.returncode == 2 and "'nan' is not a finite number" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "pool").exists()


def test_a_refused_seed_does_not_block_the_rerun(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert_user_error(cli(NAMING, "--out", str(out), *QUICK, "--seed", "-5"), "--seed")
    assert cli(NAMING, "--out", str(out), *QUICK, "--seed", "5").returncode == 0


def test_runs_that_is_not_a_number_in_the_scenario_file(tmp_path: Path) -> None:
    scenario = _file(tmp_path, 'from agentsim.games.naming import NamingGame\nRUNS = "ten"\nscenario = NamingGame()\n')
    assert_user_error(cli(scenario, "--out", str(tmp_path / "out"), "--no-live"), "RUNS must be a whole number", "'ten'")


def test_out_on_a_file_and_resume_of_a_missing_directory(tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("keep me")
    assert_user_error(cli(NAMING, "--out", str(file), *QUICK), "is a file, not a directory")
    assert file.read_text() == "keep me"
    assert_user_error(cli(NAMING, "--out", str(tmp_path / "missing"), "--resume", *QUICK), "nothing to resume")
    assert not (tmp_path / "missing").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_output_directory(tmp_path: Path) -> None:
    parent = tmp_path / "read-only"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        assert_user_error(cli(NAMING, "--out", str(parent / "out"), *QUICK), "cannot write to", "writable --out")
    finally:
        parent.chmod(0o700)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An experiment interrupted once: its database holds a checkpoint to resume from."""
    out = tmp_path_factory.mktemp("finished") / "out"
    result = cli(NAMING, "--out", str(out), "--runs", "2", *QUICK)
    assert result.returncode == 0, result.stderr
    return out


def _copy(finished: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    return out


def _truncate(database: Path) -> None:
    database.write_bytes(database.read_bytes()[: database.stat().st_size // 2])


def _scribble(database: Path) -> None:
    data = bytearray(database.read_bytes())
    for offset in range(1024, len(data), 997):  # every page's b-tree header and cells
        data[offset] ^= 0x5A
    database.write_bytes(bytes(data))


def _empty(database: Path) -> None:
    database.write_bytes(b"")


def _damage_checkpoint(database: Path) -> None:
    connection = sqlite3.connect(database)
    connection.execute("UPDATE checkpoints SET state = substr(state, 1, length(state) / 2) WHERE run = 1")
    connection.commit()
    connection.close()


def _damage_summary(database: Path) -> None:
    connection = sqlite3.connect(database)
    connection.execute("UPDATE runs SET summary = '{\"cut' WHERE run = 1")
    connection.commit()
    connection.close()


def _damage_experiment(database: Path) -> None:
    connection = sqlite3.connect(database)
    connection.execute("UPDATE experiment SET value = 'not json' WHERE key = 'params'")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("damage", [_truncate, _scribble, _empty, _damage_checkpoint, _damage_summary, _damage_experiment],
                         ids=lambda damage: damage.__name__)
def test_a_damaged_database_or_checkpoint_on_resume_changes_nothing(finished: Path, tmp_path: Path,
                                                                    damage: Callable[[Path], None]) -> None:
    out = _copy(finished, tmp_path)
    database = out / "agentsim.db"
    damage(database)
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    assert_user_error(cli(NAMING, "--out", str(out), "--resume", "--add-runs", "1", *QUICK), "nothing was changed")
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before


def test_a_foreign_sqlite_file_is_never_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    database = out / "agentsim.db"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE customers (name TEXT)")
    connection.execute("INSERT INTO customers VALUES ('kept')")
    connection.commit()
    connection.close()
    before = database.read_bytes()
    for extra in ((), ("--resume",)):
        assert_user_error(cli(NAMING, "--out", str(out), *QUICK, *extra), "agentsim did not create")
    assert database.read_bytes() == before


def test_a_second_writer_of_a_directory_gets_one_line(finished: Path, tmp_path: Path) -> None:
    out = _copy(finished, tmp_path)
    lock = DirectoryLock.acquire(out)  # another agentsim resuming it right now
    try:
        assert_user_error(cli(NAMING, "--out", str(out), "--resume", "--add-runs", "1", *QUICK), "another agentsim")
    finally:
        lock.release()
    assert cli(NAMING, "--out", str(out), "--resume", "--add-runs", "1", *QUICK).returncode == 0


def test_sigterm_stops_like_ctrl_c(tmp_path: Path) -> None:
    """SIGTERM (a batch system's stop): runs recorded `interrupted`, one line, exit 143, and
    --resume finishes them."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    arguments = [NAMING, "--out", str(out), "--set", "agents=24", "--set", "max_rounds=100000", "--set", "stop_at=none",
                 "--no-live", "--checkpoint-seconds", "0.1"]
    process = subprocess.Popen([sys.executable, "-m", "agentsim", *arguments], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out / "agentsim.db").is_file():
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    assert stderr.strip().splitlines()[-1].startswith("agentsim: interrupted by SIGTERM"), stderr
    rows = list(sqlite3.connect(out / "agentsim.db").execute("SELECT status, stop_reason FROM runs"))
    assert rows == [("interrupted", "interrupted")]
