"""Run health: a backend that cannot serve the run stops it within a minute, with status
`failed`, one line naming the backend and the fix, and exit code 3, instead of recording
fallbacks as results. Against real HTTP servers on 127.0.0.1, through the command line."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, cli
from servers import closed_port, scripted_server, standin_server  # noqa: F401  (fixtures)

NAMING = str(ROOT / "scenarios" / "naming_game.py")
QUICK = ("--set", "agents=8", "--set", "max_rounds=20", "--set", "stop_at=none", "--no-live", "--no-cache")


def assert_backend_failed(result: Any, out: Path, *fragments: str) -> dict[str, Any]:
    """Exit 3, one last line naming the backend and the fix, and the same status, stop reason
    and error in summary.json, the runs table and the log."""
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("agentsim: failed: backend '") and "--resume --out" in last, last
    assert all(fragment in last for fragment in fragments), last
    summary = json.loads((out / "summary.json").read_text())
    (run,) = summary["runs"]
    assert run["status"] == "failed" and run["stop_reason"] == "backend_failed"
    assert run["error"] in last and summary["stopped"]["message"] == run["error"]
    rows = list(sqlite3.connect(out / "agentsim.db").execute("SELECT status, stop_reason FROM runs"))
    assert rows == [("failed", "backend_failed")]
    assert "level='warning' event='run_ended' status='failed' stop_reason='backend_failed'" in result.stderr
    return summary


@pytest.mark.parametrize("provider", ["tgi", "openai", "anthropic"])
def test_nothing_listening_stops_the_run_with_one_line(tmp_path: Path, provider: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    spec = {"tgi": f"tgi:{url}", "openai": f"openai:m@{url}/v1", "anthropic": f"anthropic:m@{url}"}[provider]
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", spec, "--out", str(out), *QUICK, timeout=60)
    assert_backend_failed(result, out, "start-up probe", "nothing answers there")


@pytest.mark.parametrize(("fault", "fix"), [("500", "HTTP 5xx"), ("timeout", "no answer within --timeout")])
def test_a_permanent_fault_stops_the_run_with_one_line(tmp_path: Path, standin_server: Any, fault: str, fix: str) -> None:
    server = standin_server(capacity=8, faults={fault: 1.0}, timeout_hold_s=30)
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", f"openai:m@{server.url}/v1", "--out", str(out), "--timeout", "1",
                 "--max-attempts", "2", *QUICK, timeout=60)
    assert_backend_failed(result, out, "start-up probe", fix)


def test_a_server_that_dies_mid_run_trips_the_breaker(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8, service_time_s=0.01)
    out = tmp_path / "out"
    done = threading.Event()

    def kill_after_a_while() -> None:  # the server starts failing once the run is well under way
        while not done.is_set() and server.stats.answered < 100:
            time.sleep(0.01)
        server.faults({"503": 1.0})

    watcher = threading.Thread(target=kill_after_a_while, daemon=True)
    watcher.start()
    try:
        result = cli(NAMING, "--backend", f"tgi:{server.url}", "--out", str(out), "--set", "max_rounds=100000",
                     *QUICK[:2], *QUICK[4:], timeout=60)
    finally:
        done.set()
        watcher.join()
    summary = assert_backend_failed(result, out, "overloaded")
    assert summary["runs"][0]["interactions"] > 0, "the run went well before the server died"
    assert "level='warning' event='backend_warning'" in result.stderr


def test_replies_no_game_can_read_trip_the_fallback_breaker(tmp_path: Path, scripted_server: Any) -> None:
    server = scripted_server(mode="echo")
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", f"openai:m@{server.url}/v1", "--out", str(out), "--health-window", "20", *QUICK)
    assert_backend_failed(result, out, "decisions fell back", "--max-fallback-share")


def test_a_request_the_server_refuses_is_fatal_at_once(tmp_path: Path, scripted_server: Any) -> None:
    server = scripted_server(mode="status", status=400)
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", f"openai:m@{server.url}/v1", "--out", str(out), *QUICK)
    assert_backend_failed(result, out, "refused a request", "HTTP 400")
    assert server.requests == 1, "a 400 is neither retried nor sent again"


def test_the_health_flags_are_validated(tmp_path: Path) -> None:
    for flag, value in (("--max-fallback-share", "nan"), ("--max-failure-share", "0"), ("--health-window", "0"),
                        ("--max-consecutive-failures", "0")):
        result = cli(NAMING, "--backend", "tgi:http://127.0.0.1:9", flag, value, "--out", str(tmp_path / "o"), "--no-live")
        assert result.returncode == 2 and flag in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_max_calls_is_hard_against_a_server_whose_every_reply_is_invalid(tmp_path: Path, scripted_server: Any) -> None:
    """Every reply is re-asked twice, then falls back: the most calls a budget invites. At
    most 100 requests reach the server (counted there), the probe included; exit 4, one line;
    the runs are `stopped` with the same stop reason everywhere."""
    server = scripted_server(mode="echo")
    out = tmp_path / "out"
    result = cli(NAMING, "--backend", f"openai:m@{server.url}/v1", "--out", str(out), "--max-calls", "100",
                 "--runs", "3", "--max-fallback-share", "1", *QUICK)
    assert result.returncode == 4, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("agentsim: stopped: --max-calls 100 reached") and "--resume --out" in last, last
    assert server.requests <= 100
    summary = json.loads((out / "summary.json").read_text())
    assert {(run["status"], run["stop_reason"]) for run in summary["runs"]} == {("stopped", "max_calls")}
    assert summary["budget"]["calls"] == server.requests
    rows = set(sqlite3.connect(out / "agentsim.db").execute("SELECT status, stop_reason FROM runs"))
    assert rows == {("stopped", "max_calls")}
