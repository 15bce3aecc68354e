"""Results stay put (issue 44, items 1-3, 5, 7, 8 and 10; the readers' items are in
tests/test_readers_change_nothing.py): an import writes only under `--out`, in names it made
itself, whole or not at all (a refused file or a signal leaves `--out` as it was, and says so);
a pickle's opcodes and stack and a JSON file's depth, numbers and types are bounded and checked
before work grows with them; a tampered results directory is refused in one line, never a
traceback; `--resume` runs the scenario file its runs started with; the tampered run rows and
checkpoint marks a resume used to accept are refused with the directory unchanged; and the
messages name what is wrong."""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, cli, cli_in_process
from test_gamabench import BAR, GUESSING, write_raw
from test_import_ainorms import population_run, write_zip
from test_resume import recorded_rounds

import agentsim
from agentsim.errors import UserError
from agentsim.store import DATABASE

SCENARIO = str(ROOT / "scenarios" / "naming_game.py")
MiB = 1 << 20


def hashes(directory: Path) -> dict[str, str]:
    return {str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.rglob("*")) if path.is_file()}


def one_line(result: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code and len(lines) == 1, (result.returncode, result.stderr[-3000:])
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


# --- item 1: an import writes only under --out ---------------------------------------------------
@pytest.mark.parametrize("version", ["../../../ESCAPED", "ABSOLUTE", ["v1"], ""])
def test_a_version_from_the_file_never_names_a_path(tmp_path: Path, version: Any) -> None:
    """`meta.version` of `../../../ESCAPED` made ./ESCAPED/agentsim.db beside the user's folders (an
    absolute one wrote anywhere; `['v1']` and `''` became folder names)."""
    if version == "ABSOLUTE":
        version = str(tmp_path / "escaped-absolutely")
    source = tmp_path / "deep" / "er" / "raw"
    (source / "guessing_game").mkdir(parents=True)
    (source / "guessing_game" / "m_guessing_game_v1_1.json").write_text(
        json.dumps(GUESSING | {"meta": GUESSING["meta"] | {"version": version}}))
    out = tmp_path / "deep" / "er" / "out"
    before = set(tmp_path.rglob("*"))
    one_line(cli_in_process("import", "gamabench", str(source), "--out", str(out)), 2, "meta.version", "v1")
    assert set(tmp_path.rglob("*")) == before


def test_a_model_from_the_file_is_one_folder_under_out(tmp_path: Path) -> None:
    """A file without a model prefix is named by its players' model: `../../x` stays one folder."""
    source = tmp_path / "raw"
    (source / "guessing_game").mkdir(parents=True)
    document = copy.deepcopy(GUESSING)
    for player in document["player_data"]:
        player["model"] = "../../../ESCAPED"
    (source / "guessing_game" / "guessing_game_v1_1.json").write_text(json.dumps(document))
    out = tmp_path / "a" / "out"
    assert cli_in_process("import", "gamabench", str(source), "--out", str(out)).returncode == 0
    databases = list(tmp_path.rglob(DATABASE))
    assert len(databases) == 1 and databases[0].is_relative_to(out) and ".." not in databases[0].parts
    assert not (tmp_path / "ESCAPED").exists() and not (tmp_path / "a" / "ESCAPED").exists()


# --- item 2: a stopped import leaves nothing of itself -------------------------------------------
def blocked() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def left_beside(out: Path) -> list[str]:
    """What an import left beside or in `out` (its staging folders included)."""
    return sorted(path.name for path in out.parent.iterdir() if path.name != "raw")


@pytest.mark.timeout(900)
def test_a_signal_during_an_import_leaves_out_as_it_was_and_a_second_import_works(tmp_path: Path) -> None:
    """SIGTERM a second into `import gamabench` left 1-6 stores (one without a runs table), said
    "no run was recorded or changed", and refused the next import ("already holds runs")."""
    source = write_raw(tmp_path / "raw", runs=150)
    out = tmp_path / "out"
    began = time.monotonic()
    assert cli("import", "gamabench", str(source), "--out", str(tmp_path / "timed"), timeout=300).returncode == 0
    length = time.monotonic() - began
    shutil.rmtree(tmp_path / "timed")
    taken, left = 0, []
    for number, moment in enumerate([0.05, 0.4, *(length * share for share in (0.2, 0.35, 0.5, 0.65, 0.8))]):
        how = (signal.SIGTERM, signal.SIGINT)[number % 2]
        process = subprocess.Popen([sys.executable, "-m", "agentsim", "import", "gamabench", str(source), "--out",
                                    str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=blocked)
        time.sleep(moment)
        if process.poll() is not None:
            process.communicate()
            shutil.rmtree(out, ignore_errors=True)
            continue
        process.send_signal(how)
        _, stderr = process.communicate(timeout=120)
        taken += 1
        line = one_line(subprocess.CompletedProcess([], process.returncode, "", stderr), {signal.SIGINT: 130,
                                                                                         signal.SIGTERM: 143}[how])
        left.append((round(moment, 2), left_beside(out)))
        if "had completed" in line:  # the signal came as the whole import was moved into place
            assert len(list(out.rglob(DATABASE))) == 8
            shutil.rmtree(out)
        else:
            assert "nothing was imported" in line or "no run was recorded" in line, line
            assert left_beside(out) == [], (moment, left_beside(out))
    assert taken >= 4, left
    assert cli("import", "gamabench", str(source), "--out", str(out), timeout=300).returncode == 0
    assert len(list(out.rglob(DATABASE))) == 8 and left_beside(out) == ["out"]
    print(f"files left beside --out after each signal (moment s, names): {left}")


def test_an_ainorms_import_whose_second_file_is_refused_leaves_nothing(tmp_path: Path) -> None:
    """The first file's experiment was left under --out."""
    source = write_zip(tmp_path / "toy.zip", {
        "toy_converged_baseline_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl": {0: population_run(4, 30, seed=1, memory=2)},
        "toy_evolved_from_0_Q_M_-50_100_2mem_complete_4ps_120ints_0.5tmp.pkl": pickle.dumps({0: len}, protocol=4),
    })
    out = tmp_path / "out"
    one_line(cli_in_process("import", "ainorms", str(source), "--out", str(out)), 2, "refused, nothing was run")
    assert left_beside(out) == ["toy.zip"]
    out.mkdir()  # an empty directory is a new one
    assert cli_in_process("import", "ainorms", str(source), "--out", str(out)).returncode == 2
    assert list(out.iterdir()) == [] and left_beside(out) == ["out", "toy.zip"]


# --- item 3: bounded readers ----------------------------------------------------------------------
# The child is started by a fresh, small Python: a child forked from the test's own process
# begins with that process's resident memory as its peak (Linux keeps the high-water mark
# across exec), which in a busy test worker with torch loaded is over a gigabyte.
_MEASURE = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")


def _child_peak(arguments: list[str]) -> tuple[int, str, float, float]:
    """Exit code, stderr, seconds and peak memory (MB) of `python -m agentsim ARGUMENTS`."""
    began = time.monotonic()
    result = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "agentsim", *arguments],
                            capture_output=True, text=True, check=False)
    peak_kib = int(result.stdout.strip().splitlines()[-1])
    return result.returncode, result.stderr, time.monotonic() - began, peak_kib / 1024


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("megabytes", "kind"), [(8, "stack"), (32, "stack"), (32, "flat")])
def test_a_pickle_bomb_is_refused_before_it_grows(tmp_path: Path, megabytes: int, kind: str) -> None:
    """32 MiB of EMPTY_LIST (a 33 KB zip) cost 100 s and 2.6 GB before it was refused; 8 MiB, 6 s and
    750 MB: the opcodes and the stack are capped before the unpickler runs (times in
    benchmarks/pickle_bomb.py)."""
    body = b"]" * (megabytes * MiB) if kind == "stack" else b"]0" * (megabytes * MiB // 2)
    source = tmp_path / "bomb.zip"
    with zipfile.ZipFile(source, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("toy_converged_baseline_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl", b"\x80\x04" + body + b".")
    assert source.stat().st_size < 200_000
    code, stderr, _, peak = _child_peak(["import", "ainorms", str(source), "--out", str(tmp_path / "out")])
    one_line(subprocess.CompletedProcess([], code, "", stderr), 2, "refused, nothing was run",
             "stack" if kind == "stack" else "opcodes")
    assert peak < 400, f"{peak:.0f} MB"
    assert not (tmp_path / "out").exists()


JSON_CASES = {
    "100k deep": (b'{"meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested more than"),
    "NaN ratio": (json.dumps(GUESSING).replace('"ratio": 0.6666666666666666', '"ratio": NaN').encode(), "NaN"),
    "Infinity ratio": (json.dumps(GUESSING).replace('"ratio": 0.6666666666666666', '"ratio": -Infinity').encode(),
                       "-Infinity"),
    "1e999 mean": (json.dumps(GUESSING).replace('"mean": 30,', '"mean": 1e999,').encode(), "not a finite number"),
    "a boolean ratio": (json.dumps(GUESSING | {"meta": GUESSING["meta"] | {"ratio": True}}).encode(),
                        "meta.ratio is true, not a number"),
    "a text max": (json.dumps(GUESSING | {"meta": GUESSING["meta"] | {"max": "100"}}).encode(),
                   "meta.max is \"100\", not a number"),
    "a text mean": (json.dumps(GUESSING).replace('"mean": 30,', '"mean": "30",').encode(), "round 1's mean"),
    "a boolean response": (json.dumps(GUESSING).replace('"responses": [30, 40, 20]', '"responses": [true, 40, 20]')
                           .encode(), "responses"),
    "a bar mode naming a path": (json.dumps(BAR | {"meta": BAR["meta"] | {"mode": "../../x"}}).encode(), "meta.mode"),
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
def test_a_json_file_out_of_the_format_is_refused_in_one_line(tmp_path: Path, case: str) -> None:
    """100k-deep JSON was a RecursionError (exit 1); NaN, Infinity, texts and booleans were
    accepted and moved the score (96.2 to 3.8)."""
    content, words = JSON_CASES[case]
    source = write_raw(tmp_path / "raw")
    (source / "guessing_game" / "bad_guessing_game_v1_1.json").write_bytes(content)
    result = cli_in_process("import", "gamabench", str(source), "--out", str(tmp_path / "out"))
    one_line(result, 2, "bad_guessing_game_v1_1.json", words)
    assert not (tmp_path / "out").exists()


# --- item 5: tracebacks from tampered results ------------------------------------------------------
@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "out"
    assert cli(SCENARIO, "--out", str(out), "--set", "agents=8", "--set", "max_rounds=10", "--runs", "2",
               "--no-live").returncode == 0
    return out


@pytest.mark.parametrize("summary", ["[1, 2]", "{", '{"runs": "x"}'])
def test_report_reads_the_store_whatever_summary_json_says(finished: Path, tmp_path: Path, summary: str) -> None:
    """A summary.json of `[1,2]`, `{` or `{"runs":"x"}` was a traceback (SIGN's section read it)."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    (out / "summary.json").write_text(summary)
    result = cli_in_process("report", str(out), "--out", str(tmp_path / "report"))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    with agentsim.open(out) as results:  # the API's summary() says so in one line where it is no mapping
        if summary.startswith('{"'):
            assert results.summary() == {"runs": "x"} and len(results.runs()) == 2
        else:
            with pytest.raises(UserError, match=r"summary\.json is damaged"):
                results.summary()


def _set_experiment(out: Path, key: str, value: str) -> None:
    connection = sqlite3.connect(out / DATABASE)
    connection.execute("UPDATE experiment SET value = ? WHERE key = ?", (value, key))
    connection.commit()
    connection.close()


@pytest.mark.parametrize(("key", "value", "words"), [
    ("seed", '"x"', "the experiment's 'seed' is damaged (not a seed"),
    ("params", "{", "the experiment's 'params' is damaged (not JSON)"),  # item 10: was "give a scenario file"
    ("runs", str(10**9), "records 1000000000 runs"),  # item 10: was "--runs must be between 1 and 10000"
])
def test_a_resume_of_a_tampered_experiment_names_what_is_wrong(finished: Path, tmp_path: Path, key: str, value: str,
                                                               words: str) -> None:
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    _set_experiment(out, key, value)
    before = hashes(out)
    one_line(cli_in_process("--resume", "--out", str(out), "--no-live"), 2, words)
    assert hashes(out) == before


# --- item 7: --resume runs the file the runs started with -----------------------------------------
def test_a_resume_refuses_an_edited_scenario_file_before_running_it(tmp_path: Path) -> None:
    """--resume ran whatever .py the store named, with no check that it was the file the run started with."""
    scenario = tmp_path / "mine.py"
    scenario.write_text((ROOT / "scenarios" / "naming_game.py").read_text())
    out = tmp_path / "out"
    assert cli(str(scenario), "--out", str(out), "--set", "agents=6", "--set", "max_rounds=3", "--no-live").returncode == 0
    marker = tmp_path / "the-edited-file-ran"
    scenario.write_text(scenario.read_text() + f"\nfrom pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n")
    before = hashes(out)
    one_line(cli("--resume", "--out", str(out), "--no-live"), 2, "is not the one the runs", "--scenario-changed")
    assert not marker.exists() and hashes(out) == before  # the file the store names: refused before it ran
    one_line(cli(str(scenario), "--resume", "--out", str(out), "--set", "agents=6", "--set", "max_rounds=3",
                 "--no-live"), 2, "is not the one the runs", "--scenario-changed")
    assert hashes(out) == before  # a file the user names runs (they named it), and is refused before a write
    marker.unlink(missing_ok=True)
    assert cli("--resume", "--out", str(out), "--scenario-changed", "--no-live").returncode == 0
    assert marker.exists()  # asked for by name: the file as it is now
    recorded = sqlite3.connect(out / DATABASE).execute("SELECT value FROM experiment WHERE key = 'scenario_sha256'")
    assert json.loads(recorded.fetchone()[0]) == hashlib.sha256(scenario.read_bytes()).hexdigest()
    assert cli("--resume", "--out", str(out), "--no-live").returncode == 0  # the new file is now the recorded one


# --- item 8: the tampered run rows and checkpoint marks a resume accepted --------------------------
@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("interrupted") / "out"
    process = subprocess.Popen([sys.executable, "-m", "agentsim", SCENARIO, "--out", str(out), "--set", "agents=10",
                                "--set", "max_rounds=300", "--set", "stop_at=none", "--checkpoint-seconds", "0",
                                "--no-live"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while recorded_rounds(out / DATABASE) < 20:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130
    return out


def _checkpoint_stop_reason(connection: sqlite3.Connection, value: Any) -> None:
    (blob,) = connection.execute("SELECT state FROM checkpoints WHERE run = 1").fetchone()
    document = json.loads(zlib.decompress(blob))
    document["state"]["stop_reason"] = value
    connection.execute("UPDATE checkpoints SET state = ? WHERE run = 1", (zlib.compress(json.dumps(document).encode()),))


MUTATIONS = {
    "runs.stop_reason None": ("UPDATE runs SET stop_reason = NULL WHERE run = 1", "row 1 is damaged"),
    "runs.stop_reason 'x'": ("UPDATE runs SET stop_reason = 'x' WHERE run = 1", "row 1 is damaged"),
    "checkpoints.state None": ("UPDATE checkpoints SET state = NULL WHERE run = 1", "column 'state'"),
    "checkpoints.t -1": ("UPDATE checkpoints SET t = -1 WHERE run = 1", "marked t=-1"),
    "checkpoints.t 10**12": ("UPDATE checkpoints SET t = 1000000000000 WHERE run = 1", "marked t=1000000000000"),
    "checkpoints.t 'x'": ("UPDATE checkpoints SET t = 'x' WHERE run = 1", "column 't'"),
    "the checkpoint's stop_reason 'x'": (lambda connection: _checkpoint_stop_reason(connection, "x"), "stopped for 'x'"),
    "a run's checkpoint row deleted": ("DELETE FROM checkpoints WHERE run = 1", "no checkpoint"),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_the_mutations_a_resume_accepted_are_refused_and_nothing_changes(interrupted: Path, tmp_path: Path,
                                                                          mutation: str) -> None:
    """Six were accepted (exit 0, the database changed): the runs row's stop_reason None or 'x',
    the checkpoint's state None, its t -1, 10^12 or 'x'."""
    out = tmp_path / "out"
    shutil.copytree(interrupted, out)
    change, words = MUTATIONS[mutation]
    connection = sqlite3.connect(out / DATABASE)
    connection.execute(change) if isinstance(change, str) else change(connection)
    connection.commit()
    connection.close()
    before = hashes(out)
    one_line(cli_in_process("--resume", "--out", str(out), "--no-live"), 2, words)
    assert hashes(out) == before


def test_the_untampered_directory_resumes(interrupted: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(interrupted, out)
    assert cli_in_process("--resume", "--out", str(out), "--no-live").returncode == 0
