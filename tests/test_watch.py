"""`python -m agentsim watch` without a browser (issue 39): what its server reads, and that it
reads without writing. A SQLite reader opened `mode=ro` on a database in WAL mode creates its
`-wal` and `-shm` files when the writer has gone (shown here, so that the test can fail):
`watch` opens an ended run `immutable=1` instead, and beside a live writer it reads the latest
commit and keeps no file behind once the writer closes. Its figures are the family's own
(`live_figures`) at the run's last checkpoint. The page in a real browser:
tests/test_watch_browser.py."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from helpers import ROOT, cli, run_experiment

from agentsim.games.naming import NamingGame
from agentsim.store import DATABASE, Recorder, Store
from agentsim.watch import Watcher, read_only, usable_scenario_file


def files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}


def test_an_ended_run_is_read_without_a_file_written(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_experiment(NamingGame(agents=8, max_rounds=20), out, runs=2)
    before = files(out)
    assert DATABASE in before and not any(name.endswith(("-wal", "-shm")) for name in before)

    state = Watcher(out, min_interval_s=0).state()
    Watcher(out, min_interval_s=0).state()
    assert files(out) == before  # byte for byte, no -wal or -shm made

    (experiment,) = state["experiments"]
    summaries = {row["run"]: row for row in json.loads((out / "summary.json").read_text())["runs"]}
    assert [run["status"] for run in experiment["runs"]] == ["done", "done"] and experiment["recording"] is False
    for run in experiment["runs"]:
        summary = summaries[run["run"]]
        assert run["rounds"] == summary["rounds"] and run["usage"]["calls"] == summary["calls"]
        assert run["figures"]["success_rate"] == summary["final_success_rate"]
        assert dict(run["figures"]["lines"])["agreement"].startswith(f"{summary['final_agreement']:.0%}")

    # What watch avoids: SQLite's read-only open of the same file writes beside it.
    control = tmp_path / "control"
    control.mkdir()
    (control / DATABASE).write_bytes(before[DATABASE])
    connection = sqlite3.connect(f"{(control / DATABASE).as_uri()}?mode=ro", uri=True)
    connection.execute("SELECT COUNT(*) FROM runs").fetchone()
    connection.close()
    assert {path.name for path in control.iterdir()} > {DATABASE}


def test_beside_a_writer_it_reads_the_latest_commit_and_leaves_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.set_experiment({"scenario": "naming_game"})
    store.begin_run(1, replicate=0, seed=1, backend="stand-in", agents=[(0, "llm", "stand-in")])
    with read_only(tmp_path / DATABASE) as connection:
        assert connection.execute("SELECT status FROM runs").fetchall() == [("running",)]
    store.commit(Recorder(1), b"{}", 0)
    store.set_status(1, "done", stop_reason="max_rounds", summary={})
    with read_only(tmp_path / DATABASE) as connection:
        assert connection.execute("SELECT status FROM runs").fetchall() == [("done",)]
        try:
            connection.execute("INSERT INTO experiment VALUES ('x', '1')")
            raise AssertionError("a reader wrote")
        except sqlite3.OperationalError:
            pass
    store.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == [DATABASE]  # the writer removed its side files


def test_watch_refuses_what_is_not_a_results_directory(tmp_path: Path) -> None:
    """A file is refused; a directory that does not exist yet is waited for (the page says so,
    tests/test_watch_browser.py)."""
    (tmp_path / "a_file").write_text("x")
    file = cli("watch", str(tmp_path / "a_file"))
    assert file.returncode == 2 and "is a file, not a directory" in file.stderr and len(file.stderr.splitlines()) == 1
    state = Watcher(tmp_path / "nowhere" / "yet", min_interval_s=0).state()
    assert state["exists"] is False and state["experiments"] == [] and not (tmp_path / "nowhere").exists()
    port = cli("watch", str(tmp_path), "--port", "70000")
    assert port.returncode == 2 and "--port must be from 0 to 65535" in port.stderr


# One scenario of every family, small: (file, overrides).
FAMILIES = [
    ("naming_game.py", {"agents": 6, "max_rounds": 6, "committed": 2}),
    ("network_topology.py", {"agents": 8, "max_rounds": 6, "topologies": ("ring",)}),
    ("sign_schema.py", {"agents": 6, "lexicon_size": 6, "max_rounds": 4, "condition": "schema", "memory_length": 5,
                        "alpha": 0.75}),
    ("theory_minimal_naming.py", {"agents": 8, "max_rounds": 5}),
    ("commons_fishing.py", {}),
    ("donor_game.py", {"generations": 2, "condition": "norms"}),
    ("prisoners_dilemma.py", {"agents": 4, "max_rounds": 3}),
]


@pytest.mark.slow  # seven experiments
def test_every_family_is_shown_from_its_store(tmp_path: Path) -> None:
    """Each family's runs read back with the family's own figures, as the live view shows them."""
    import agentsim

    for file, overrides in FAMILIES:
        out = tmp_path / file.removesuffix(".py")
        agentsim.run(str(ROOT / "scenarios" / file), runs=1, overrides=overrides, out=out, progress=False)
        (experiment,) = Watcher(out, min_interval_s=0).state()["experiments"]
        (run,) = experiment["runs"]
        assert run["status"] == "done" and "error" not in run, (file, run.get("error"))
        figures = run["figures"]
        assert figures["lines"] or figures["shares"] or figures["success_rate"] is not None, file
        assert run["rounds"] == json.loads((out / "summary.json").read_text())["runs"][0]["rounds"], file
        if file == "network_topology.py":
            assert len(run["graph"]["nodes"]) == 8 and len(run["graph"]["edges"]) == 16  # a ring of mean degree 4
        if file == "naming_game.py":
            assert {"committed", "flip"} <= dict(figures["lines"]).keys()


def test_the_page_loads_no_inline_script(tmp_path: Path) -> None:
    """The page's script and style are files of its own (the policy allows no inline script)."""
    from agentsim.watch import asset, page

    html = page().decode()
    assert "<script>" not in html and "<style>" not in html and ' style="' not in html and " on" not in html.lower()
    assert '<script src="watch.js" defer></script>' in html and 'href="watch.css"' in html
    script = asset("watch.js").decode()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "outerHTML" not in script


def test_a_recorded_scenario_file_is_loaded_only_when_its_recorded_digest_matches(tmp_path: Path) -> None:
    """`watch` finds a user's own scenario class from the recorded file without `--scenario`,
    but a results directory brings no code: a file is used only when the runs recorded its
    content's digest and the file on disk still has it (an absent digest, as a tampered or an
    old store has, or a changed file: nothing is run)."""
    source = "from agentsim.games.naming import NamingGame\n\nclass Mine(NamingGame):\n    pass\n"
    file = tmp_path / "mine.py"
    file.write_text(source)
    root = tmp_path / "results"
    root.mkdir()
    experiment = {"scenario_file": str(file), "scenario_class": "agentsim_scenarios.mine.Mine",
                  "scenario_sha256": hashlib.sha256(source.encode()).hexdigest()}
    assert usable_scenario_file(experiment, root) == file.resolve()
    assert usable_scenario_file({k: v for k, v in experiment.items() if k != "scenario_sha256"}, root) is None
    file.write_text(source + "# changed\n")
    assert usable_scenario_file(experiment, root) is None
