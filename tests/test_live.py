"""The live view, rendered into a fixed-size recording console; and the log lines."""

from __future__ import annotations

import io

from rich.console import Console

from agentsim.figures import LiveFigures
from agentsim.live import LogView, render, sparkline
from agentsim.runner import RunView


def view(**changes: object) -> RunView:
    values = dict(
        run=1, seed=7, status="running", rounds_done=12, max_rounds=30, interactions=144, stop_reason=None,
        metrics=LiveFigures(success_rate=0.8, success_history=(0.1, 0.5, 0.8), shares={"Q": 0.25, "M": 0.75},
                            lines=(("committed", "6 of 24 (25%) play Q"), ("flip", "not yet (Q at 25% among the others)"))),
        usage={"calls": 288, "prompt_tokens": 90000, "completion_tokens": 1700, "in_flight": 3,
               "latency_p50_s": 0.42, "latency_p95_s": 1.3, "invalid_replies": 2, "reasks": 2, "fallbacks": 0},
        calls_per_second=24.0,
    )
    values.update(changes)
    return RunView(**values)  # type: ignore[arg-type]


def text(renderable: object) -> str:
    console = Console(width=110, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_the_view_shows_what_a_run_is_doing() -> None:
    screen = text(render({"scenario": "naming_game", "backend": "stand-in", "seed": 7, "runs": 2, "out": "results/x"},
                         [view(), view(run=2, seed=8, status="done", stop_reason="flip")]))
    for fragment in ("naming_game", "backend stand-in", "not an LLM", "seed 7", "runs 2", "round 12/30",
                     "144 interactions", "80%", sparkline([0.1, 0.5, 0.8]), "M ", "75%", "25%",
                     "committed 6 of 24 (25%) play Q", "flip not yet", "288 (24/s), in flight 3", "tokens 91700",
                     "p50 420.0 ms, p95 1.30 s", "2 invalid, 2 re-asks, 0 fallbacks", "flip"):
        assert fragment in screen, fragment


def test_a_real_backend_is_not_called_a_stand_in() -> None:
    screen = text(render({"scenario": "naming_game", "backend": "openai:gpt-4o-mini", "seed": 0, "runs": 1}, [view()]))
    assert "openai:gpt-4o-mini" in screen and "stand-in" not in screen


def test_the_view_shows_cost_cache_hits_retries_and_errors_of_a_real_backend() -> None:
    usage = view().usage | {"cost_usd": 0.0123, "cache_hits": 40, "retries": 7, "errors": {"rate_limited": 6, "timeout": 1}}
    screen = text(render({"scenario": "naming_game", "backend": "openai:gpt-4o-mini", "seed": 0, "runs": 1},
                         [view(usage=usage)]))
    assert "$0.0123, 40 cache hits, 7 retries, errors: rate_limited 6, timeout 1" in screen


def test_sparkline_spans_empty_to_full() -> None:
    assert sparkline([0.0, 0.5, 1.0]) == " ▄█"


def test_log_lines_without_a_terminal(capsys) -> None:  # type: ignore[no-untyped-def]
    from agentsim.live import configure_logging

    configure_logging()
    log = LogView(every_seconds=0)
    log.start({"scenario": "naming_game", "backend": "stand-in", "seed": 0, "runs": 1})
    log.update([view()])
    log.update([view(status="done", stop_reason="consensus")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert "event='experiment_started'" in lines[0] and "stand_in=True" in lines[0]
    assert "event='run_progress'" in lines[1] and "round=12" in lines[1]
    assert "event='run_ended'" in lines[2] and "stop_reason='consensus'" in lines[2]
    assert "success_rate=0.8" in lines[1]
    log.update([view(run=2, metrics=LiveFigures(lines=(("month", "3 of 12"),)))])  # the commons: no notion of success
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "run=2" in line and "success_rate" not in line


def test_a_ray_sweep_shows_its_runs_and_workers_as_a_whole() -> None:
    """Where runs carry the Ray worker running them, the view counts the sweep's runs by
    status (those not begun as waiting) and the workers and hosts at work."""
    runs = [view(run=1, worker="gpu-a:101"), view(run=2, worker="gpu-b:202"),
            view(run=3, status="done", stop_reason="flip", worker="gpu-a:101")]
    screen = text(render({"scenario": "naming_game", "backend": "stand-in", "seed": 7, "runs": 10, "out": "x"}, runs))
    assert "Ray sweep: 1 done, 2 running, 7 waiting of 10; 2 workers on 2 hosts" in screen
    assert "Ray sweep" not in text(render({"scenario": "naming_game", "backend": "stand-in", "seed": 7, "runs": 2},
                                          [view()]))
