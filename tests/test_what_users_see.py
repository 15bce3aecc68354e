"""What a user sees: the transcript of a run, the live view in an 80x24 terminal, labels
(rule agents, each run's SIGN condition, results named after the scenario file), the
stand-in's ignored parameters, template fields checked at start, and --help."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

from helpers import ROOT, cli, run_experiment
from rich.console import Console

from agentsim.analysis.report import build_report
from agentsim.analysis.transcript import write_transcript
from agentsim.figures import LiveFigures
from agentsim.games.naming import NamingGame, NamingStandInSettings
from agentsim.live import render
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.runner import RULE_AGENTS, RunView
from agentsim.scenario_files import load_scenario
from agentsim.store import Store


class RecordingStandIn(StandInModel):
    """The stand-in, keeping every conversation it was sent."""

    name = "stand-in"
    immediate = False

    def __init__(self, rules: Any) -> None:
        super().__init__(rules)
        self.sent: list[tuple[Any, ...]] = []

    async def complete(self, request: Request) -> Completion:
        self.sent.append(request.messages)
        return self.answer(request)


def _transcript(directory: Path, **filters: Any) -> str:
    out = io.StringIO()
    write_transcript(directory, out, **filters)
    return out.getvalue()


def test_transcript_prints_every_conversation_as_it_was_sent(tmp_path: Path) -> None:
    template = tmp_path / "mine.txt"
    shutil.copy(ROOT / "agentsim" / "games" / "naming" / "prompts" / "standard.txt", template)
    recorder: list[RecordingStandIn] = []

    def backend(scenario: Any) -> RecordingStandIn:
        recorder.append(RecordingStandIn(scenario.standin_part().rules))
        return recorder[0]

    game = NamingGame(agents=6, names=("Q", "M"), memory_length=3, max_rounds=3, prompt=str(template),
                      standin=NamingStandInSettings(invalid_rate=0.3), max_reasks=1)
    run_experiment(game, tmp_path / "out", seed=2, backend=backend)
    sent = recorder[0].sent
    assert any(len(messages) > 2 for messages in sent), "some re-asks, so conversations continue"
    # Today's file differs from the one the run used: the transcript prints what was sent.
    template.write_text(template.read_text().replace("partnership game", "EDITED game"))
    text = _transcript(tmp_path / "out")
    assert "EDITED" not in text
    assert text.count("[reply, attempt ") == len(sent)
    for messages in sent:
        for message in messages:
            assert message.content in text
    header = re.findall(r"=== run (\d+) \(seed 2\) · round (\d+) · t (\d+) · agent (\d+) \(stand-in\) ===", text)
    store = Store(tmp_path / "out")
    decisions = {(run, t, agent) for run, t, agent in store.rows("SELECT DISTINCT run, t, agent FROM calls")}
    rounds = {(run, t): round_ for run, t, round_ in store.rows("SELECT run, t, round FROM encounters")}
    store.close()
    assert {(int(run), int(t), int(agent)) for run, _round, t, agent in header} == decisions
    assert all(rounds[(int(run), int(t))] == int(round_) for run, round_, t, _agent in header)

    _, round_, _, agent = header[len(header) // 2]  # an agent and round that made calls, whatever the draws
    only = _transcript(tmp_path / "out", agent=int(agent), round_=int(round_))
    headers = re.findall(r"· round (\d+) · t \d+ · agent (\d+)", only)
    assert headers and all(found == (round_, agent) for found in headers)


def test_transcript_command_on_sign_shows_each_runs_own_condition(tmp_path: Path) -> None:
    out = tmp_path / "sign"
    ran = cli(str(ROOT / "scenarios" / "sign_schema.py"), "--out", str(out), "--no-live", "--set", "max_rounds=2",
              "--set", "agents=4", "--set", "alpha=0.5")
    assert ran.returncode == 0, ran.stderr
    summary = json.loads((out / "summary.json").read_text())
    conditions = {run["run"]: run["condition"] for run in summary["runs"]}
    # The log line of every run names its own cell and its own condition.
    labels = {"nl": "NL", "nl-sw": "NL-SW", "schema": "Schema"}
    for line in ran.stderr.splitlines():
        if "event='run_ended'" in line:
            run = int(re.search(r"\brun=(\d+)", line).group(1))  # type: ignore[union-attr]
            assert f"condition='{labels[conditions[run]]}'" in line and f"condition={conditions[run]}" in line
    schema_run = next(run for run, condition in conditions.items() if condition == "schema")
    shown = cli("transcript", str(out), "--run", str(schema_run))
    assert shown.returncode == 0, shown.stderr
    assert "@say {name:" in shown.stdout and f"=== run {schema_run} " in shown.stdout
    nothing = cli("transcript", str(out), "--run", "999")
    assert nothing.returncode == 2 and len(nothing.stderr.strip().splitlines()) == 1


def test_help_lists_the_subcommands() -> None:
    shown = cli("--help")
    assert shown.returncode == 0
    for name in ("report", "bias", "strategies", "critical-mass", "transcript", "comprehension", "unbiased-pool"):
        assert re.search(rf"^  {re.escape(name)}\s+\w", shown.stdout, re.MULTILINE), name


def _view(run: int, **changes: Any) -> RunView:
    values: dict[str, Any] = {
        "run": run, "seed": run, "status": "running", "rounds_done": 12, "max_rounds": 30, "interactions": 144,
        "stop_reason": None, "metrics": LiveFigures(
            success_rate=0.8, success_history=(0.5,) * 80, shares=dict.fromkeys("ABCDEFGHIJ", 0.1),
            shares_label="choices", shares_note="last 144 choices, committed agents' plays included",
            lines=(("agreement", "80% (latest choices of the non-committed agents)"),
                   ("committed", "6 of 24 (25%) play Q"),
                   ("flip", "not yet (Q at 25% of the others' 102 latest choices)"))),
        "usage": {"calls": 288, "prompt_tokens": 90000, "completion_tokens": 1700, "in_flight": 3, "latency_p50_s": 0.42,
               "latency_p95_s": 1.3, "invalid_replies": 2, "reasks": 2, "fallbacks": 0, "cost_usd": 0.5,
               "cache_hits": 3, "retries": 1, "errors": {"timeout": 1}},
        "calls_per_second": 24.0, "cell": "condition=nl-sw, agents=24, memory_length=10, alpha=0.99"}
    values.update(changes)
    return RunView(**values)


def test_the_live_view_fits_80_by_24_with_elapsed_time_and_eta() -> None:
    experiment = {"scenario": "sign", "backend": "stand-in", "seed": 0, "runs": 90,
                  "out": "results/sign_schema/20261124-153000-with-a-long-name", "warnings": ["a warning " * 12]}
    runs = [_view(run, status="running" if run <= 8 else "done") for run in range(1, 41)]
    console = Console(width=80, height=24, record=True, color_system=None, file=io.StringIO())
    console.print(render(experiment, runs, elapsed_s=125.0, height=24))
    lines = console.export_text().rstrip("\n").splitlines()
    assert len(lines) <= 24 and max(len(line) for line in lines) <= 80, "\n".join(lines)
    screen = "\n".join(lines)
    for fragment in ("elapsed 2m05s", "ETA ≤", "more runs", "committed agents' plays included",
                     "non-committed agents", "condition=nl-sw", "choices"):
        assert fragment in screen, fragment


def test_theory_runs_are_rule_agents_everywhere(tmp_path: Path) -> None:
    scenario, _module = load_scenario(ROOT / "scenarios" / "theory_minimal_naming.py")
    run_experiment(scenario.with_overrides({"max_rounds": "5"}), tmp_path / "theory", seed=1, runs=2)
    summary = json.loads((tmp_path / "theory" / "summary.json").read_text())
    assert summary["backend"] == RULE_AGENTS and summary["stand_in"] is False and summary["rule_agents"] is True
    assert all(run["backend"] == RULE_AGENTS for run in summary["runs"])
    store = Store(tmp_path / "theory")
    assert store.experiment()["backend"] == RULE_AGENTS
    store.close()
    build_report(tmp_path)
    html = (tmp_path / "report" / "report.html").read_text()
    assert "rule agents" in html and "stand-in" not in html


def test_results_are_named_after_the_scenario_file(tmp_path: Path) -> None:
    ran = cli(str(ROOT / "scenarios" / "collective_bias.py"), "--runs", "1", "--set", "max_rounds=2", "--no-live",
              cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert [path.name for path in (tmp_path / "results").iterdir()] == ["collective_bias"]


def test_the_stand_in_says_which_parameters_it_ignores(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ran = cli(str(ROOT / "scenarios" / "naming_game.py"), "--set", "max_rounds=2", "--set", "success_payoff=200",
              "--set", "temperature=0.2", "--no-live", "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    warnings = [line for line in ran.stderr.splitlines() if "ignores" in line]
    assert len(warnings) == 1 and "success_payoff=200" in warnings[0] and "temperature=0.2" in warnings[0]
    assert json.loads((out / "summary.json").read_text())["standin_ignored"] == {"success_payoff": 200, "temperature": 0.2}
    plain = cli(str(ROOT / "scenarios" / "naming_game.py"), "--set", "max_rounds=2", "--no-live", "--out", str(tmp_path / "p"))
    assert "ignores" not in plain.stderr
    assert "standin_ignored" not in json.loads((tmp_path / "p" / "summary.json").read_text())


def test_fallbacks_are_counted_beside_the_figures_in_the_log_and_the_summary(tmp_path: Path) -> None:
    """Issue 25: the flip share and the final Q share were computed from fallbacks. With most
    replies unusable, they are taken over the choices, and the fallbacks are counted beside."""
    out = tmp_path / "out"
    ran = cli(str(ROOT / "scenarios" / "critical_mass.py"), "--set", "max_rounds=3", "--set", "max_reasks=0",
              "--set", "standin.invalid_rate=0.8", "--max-fallback-share", "1", "--no-live", "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    assert run["fallbacks"] > 0 and run["fallback_moves"] == run["fallbacks"]
    assert run["final_alternative_choices"] < run["interactions"] * 2 - run["fallbacks"] + 1
    ended = next(line for line in ran.stderr.splitlines() if "event='run_ended'" in line)
    assert f"fallbacks={run['fallbacks']}" in ended and f"others' {run['final_alternative_choices']} latest choices" in ended
    store = Store(out)
    rounds = [json.loads(stats) for (stats,) in store.rows("SELECT stats FROM rounds WHERE run = 1")]
    store.close()
    assert sum(entry["fallbacks"] for entry in rounds) == run["fallbacks"]
    assert sum(sum(entry["productions"].values()) for entry in rounds) == 2 * run["interactions"] - run["fallbacks"]


def test_a_template_without_a_required_field_stops_at_start(tmp_path: Path) -> None:
    template = tmp_path / "forgetful.txt"
    template.write_text((ROOT / "agentsim" / "games" / "naming" / "prompts" / "standard.txt").read_text()
                        .replace("{entries}", ""))
    ran = cli(str(ROOT / "scenarios" / "naming_game.py"), "--set", f"prompt={template}", "--no-live",
              "--out", str(tmp_path / "out"))
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        ("agentsim: error: prompt template 'forgetful' lacks the field {entries} in its [history] section; "
         "add it (docs/writing-a-scenario.md lists each section's fields)")]
    assert not (tmp_path / "out").exists()
