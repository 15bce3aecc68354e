"""The command line's conventions (issue 30): --version, --help for every subcommand, "did you
mean" on a misspelt subcommand or --set key, JSON log lines ending in `experiment_ended`, a
reader that goes away (`| head -1`) ending quietly, and local models that exist or fail at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, cli

from agentsim import __version__
from agentsim.analysis.commands import SUBCOMMANDS
from agentsim.cli import build_parser, main

NAMING = str(ROOT / "scenarios" / "naming_game.py")
NETWORK = str(ROOT / "scenarios" / "network_topology.py")
SMALL = ("--set", "agents=6", "--set", "max_rounds=2", "--no-live")


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"agentsim {__version__}"


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_has_its_own_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m agentsim {name}") and "--help" in out, out


def test_the_help_names_the_local_models() -> None:
    text = build_parser().format_help()
    assert "local:smollm2" in text and "--log-format" in text and "--version" in text


def test_a_misspelt_subcommand_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reprot", "results/x"]) == 2
    line = one_line(capsys)
    assert line.startswith("agentsim: error: unknown subcommand 'reprot'") and "did you mean 'report'?" in line


def test_a_misspelt_set_key_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([NAMING, "--set", "agnets=8", "--no-live"]) == 2
    line = one_line(capsys)
    assert "unknown parameter 'agnets'; did you mean 'agents'? known parameters are" in line and "known parameters are" in line


def test_a_key_the_scenario_does_not_read_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The network scenario draws each replicate's graph from `topologies`: `topology=ring`
    used to run on every family as if nothing had been said."""
    assert main([NETWORK, "--set", "topology=ring", "--out", str(tmp_path / "out"), "--no-live"]) == 2
    line = one_line(capsys)
    assert "does not read parameter 'topology'" in line and "did you mean 'topologies'?" in line, line
    assert not (tmp_path / "out").exists()


def test_json_log_lines_end_with_the_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main([NAMING, "--out", str(out), "--runs", "2", "--log-format", "json", *SMALL]) == 0
    events = [json.loads(line) for line in capsys.readouterr().err.strip().splitlines()]  # each line parses
    assert events[0]["event"] == "experiment_started" and events[0]["stand_in"] is True
    assert sum(event["event"] == "run_ended" for event in events) == 2
    last = events[-1]
    assert last["event"] == "experiment_ended" and last["outcome"] == "done" and last["exit_code"] == 0
    assert last["statuses"] == {"done": 2} and last["next"] == f"python -m agentsim report {out}"


def test_json_log_lines_of_a_failed_run_carry_its_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A failure's one line goes into experiment_ended, so that every line stays JSON (here
    SIGN's prompt template names a field the game does not supply: found at its first prompt)."""
    nl = (ROOT / "agentsim" / "games" / "sign" / "prompts" / "nl.txt").read_text()
    assert "{lexicon}" in nl
    (tmp_path / "team.txt").write_text(nl.replace("{lexicon}", "{lexicon} (team {team})", 1))
    out = tmp_path / "out"
    assert main([str(ROOT / "scenarios" / "sign_schema.py"), "--out", str(out), "--log-format", "json", "--set",
                 f"prompt={tmp_path / 'team.txt'}", "--set", "condition=nl", "--runs", "1", "--no-live"]) == 2
    events = [json.loads(line) for line in capsys.readouterr().err.strip().splitlines()]
    last = events[-1]
    assert last["event"] == "experiment_ended" and last["exit_code"] == 2 and last["outcome"] == "user_error"
    assert "uses the field {team}" in last["message"] and last["calls"] == 0 and last["next"] == ""


def test_text_log_lines_end_with_the_summary_and_next_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([NAMING, "--out", str(tmp_path / "out"), *SMALL]) == 0
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "event='experiment_ended'" in last and "outcome='done'" in last and "report" in last


def _closed_reader(*arguments: str) -> subprocess.CompletedProcess[str]:
    """`python -m agentsim ARGUMENTS | head -0`: the reader is gone before a line is written."""
    process = subprocess.Popen([sys.executable, "-m", "agentsim", *arguments], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    process.stdout.close()
    process.stdout = None
    _, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, "", err)


def test_a_reader_that_goes_away_ends_quietly() -> None:
    for arguments in (("--help",), ("unbiased-pool", "--samples", "40", "--tries", "3")):
        result = _closed_reader(*arguments)
        assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr


def test_log_lines_to_a_reader_that_goes_away_leave_the_run_recorded(tmp_path: Path) -> None:
    """`... --no-live 2>&1 | head -1`: the run goes on and records everything."""
    out = tmp_path / "out"
    script = (f"{sys.executable} -m agentsim {NAMING} --out {out} --runs 3 {' '.join(SMALL)} 2>&1 | head -1; "
              f"exit ${{PIPESTATUS[0]}}")
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "experiment_started" in result.stdout and "Traceback" not in result.stdout + result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [run["status"] for run in summary["runs"]] == ["done"] * 3


def test_an_unknown_local_model_fails_at_once_without_a_hub(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import agentsim.llm.local as local

    def no_hub(*args: object, **kwargs: object) -> None:
        raise AssertionError("tried to load a model (a hub download) for a name that is no file")

    monkeypatch.setattr(local.LocalModel, "__init__", no_hub)
    for name in ("no-such-model", "someone/no-such-model", "missing.gguf"):
        assert main([NAMING, "--backend", f"local:{name}", *SMALL]) == 2
        line = one_line(capsys)
        assert f"'{name}' is neither a file or directory here nor a known local model" in line
        assert "local:smollm2" in line


def test_the_live_view_at_80_columns_keeps_stop_reasons_and_cells_readable() -> None:
    import io

    from rich.console import Console
    from test_live import view

    from agentsim.live import render

    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    console.print(render({"scenario": "sign_schema", "backend": "stand-in", "seed": 7, "runs": 3, "out": "x"},
                         [view(cell="condition=nl, memory_length=0", status="done", stop_reason="flip"),
                          view(run=2, cell="condition=schema, memory_length=3", stop_reason="first_convention_flipped")]))
    console.print(render({"scenario": "critical_mass", "backend": "openai:gpt-4o-mini", "seed": 0, "runs": 10,
                          "out": "results/critical_mass/20261126-101500"}, [view(), view(run=2)], elapsed_s=187))
    screen = console.export_text()
    assert "→ results/critical_mass/20261126-101500 " in screen  # whole, on its own line when the line is full
    assert "stopped first convention flipped" in screen  # the focused run: its own line, not cut
    assert "flip" in screen and "schema, 3" in screen and "nl, 0" in screen  # the table: values under the cell
    assert "condition=schema, memory_length=3" in screen  # the focused run's title names the keys
    assert all(len(line) <= 80 for line in screen.splitlines())


def test_a_live_run_ends_with_its_summary_and_the_next_step() -> None:
    import io

    from rich.console import Console

    from agentsim.live import RichView

    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    RichView(console).conclude(outcome="done", exit_code=0, out="results/x",
                               runs=[{"status": "done", "stop_reason": "consensus", "calls": 10, "fallbacks": 0}])
    screen = console.export_text()
    assert "1 run: 1 done (consensus 1); 10 calls, 0 fallbacks" in screen
    assert "next: python -m agentsim report results/x" in screen


def test_the_cli_subprocess_prints_the_version() -> None:
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"agentsim {__version__}"


def test_the_live_view_carries_a_searchs_progress_line() -> None:
    import io

    from rich.console import Console
    from test_live import view

    from agentsim.live import RichView

    console = Console(width=80, height=24, record=True, color_system=None, file=io.StringIO(), force_terminal=True)
    live = RichView(console, notes=["against M (committed say Q): trying 12 committed of 24, 10 runs each"])
    live.start({"scenario": "naming_game", "backend": "stand-in", "seed": 0, "runs": 10, "out": "x"})
    live.update([view()])
    live.stop()
    assert "trying 12 committed of 24" in console.export_text()
