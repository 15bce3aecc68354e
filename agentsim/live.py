"""The live terminal view (rich), and structured log lines (structlog) where there is no terminal.

The view draws from immutable `RunView` snapshots that the runner hands over after each
population round (at most four times a second), on the event loop's own thread: one `Live`
with auto-refresh off, fed a renderable built by the pure function `render`.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import structlog
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .runner import RunView

_BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """Values in [0, 1] as a line of block characters."""
    return "".join(_BLOCKS[min(int(value * (len(_BLOCKS) - 1) + 0.5), len(_BLOCKS) - 1)] for value in values)


def duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def render(experiment: dict[str, Any], runs: list[RunView]) -> RenderableType:
    backend = experiment.get("backend", "?")
    title = Text.assemble(
        (f"{experiment.get('scenario', '?')}", "bold"),
        "  backend ",
        (backend, "bold yellow" if backend.startswith("stand-in") else "bold"),
        (" (built-in stand-in rules, not an LLM)" if backend.startswith("stand-in") else "", "yellow"),
        f"  seed {experiment.get('seed')}  runs {experiment.get('runs')}  → {experiment.get('out', '')}",
    )
    parts: list[RenderableType] = [title]
    parts.extend(Text(f"warning: {message}", style="bold red") for message in experiment.get("warnings", []))
    if not runs:
        return Panel(Group(*parts), title="agentsim")
    if len(runs) > 1:
        table = Table(box=None, pad_edge=False, show_edge=False)
        for column in ("run", "seed", "status", "round", "success", "leading", "state"):
            table.add_column(column)
        for view in runs:
            shares = view.metrics.get("shares") or {}
            leading = max(shares, key=shares.get) if shares else "-"  # type: ignore[arg-type]
            table.add_row(str(view.run), str(view.seed), view.status, f"{view.rounds_done}/{view.max_rounds}",
                          f"{view.metrics.get('success_rate', 0):.0%}", leading, view.stop_reason or "")
        parts.append(table)
    focus = next((view for view in runs if view.status == "running"), runs[-1])
    parts.append(_run_panel(focus))
    return Panel(Group(*parts), title="agentsim")


def _run_panel(view: RunView) -> RenderableType:
    metrics, usage = view.metrics, view.usage
    rows = Table.grid(padding=(0, 1))
    rows.add_column(style="bold", justify="right")
    rows.add_column()
    total = max(view.max_rounds, 1)
    progress = Table.grid(padding=(0, 1))
    progress.add_row(ProgressBar(total=total, completed=min(view.rounds_done, total), width=30),
                     f"round {view.rounds_done}/{view.max_rounds}, {view.interactions} interactions"
                     f"{', stopped: ' + view.stop_reason if view.stop_reason else ''}")
    rows.add_row("progress", progress)
    if "success_rate" in metrics:
        history = metrics.get("success_history") or []
        rows.add_row("success", f"{metrics['success_rate']:.0%}  {sparkline(history)}")
    shares = metrics.get("shares") or {}
    if shares:
        bars = Table.grid(padding=(0, 1))
        for name, share in sorted(shares.items(), key=lambda item: -item[1]):
            bars.add_row(Text(str(name), style="bold"), ProgressBar(total=1.0, completed=share, width=30), f"{share:.0%}")
        rows.add_row("names", bars)
    for label, text in metrics.get("lines", []):
        rows.add_row(label, text)
    rows.add_row("calls", f"{usage.get('calls', 0)} ({view.calls_per_second:.0f}/s), in flight {usage.get('in_flight', 0)}, "
                          f"tokens {usage.get('prompt_tokens', 0) + usage.get('completion_tokens', 0)}")
    rows.add_row("latency", f"p50 {duration(usage.get('latency_p50_s', 0))}, p95 {duration(usage.get('latency_p95_s', 0))}")
    if usage.get("cost_usd") or usage.get("cache_hits") or usage.get("retries") or usage.get("errors"):
        errors = ", ".join(f"{kind} {count}" for kind, count in sorted((usage.get("errors") or {}).items()))
        rows.add_row("backend", f"${usage.get('cost_usd', 0):.4f}, {usage.get('cache_hits', 0)} cache hits, "
                                f"{usage.get('retries', 0)} retries" + (f", errors: {errors}" if errors else ""))
    rows.add_row("replies", f"{usage.get('invalid_replies', 0)} invalid, {usage.get('reasks', 0)} re-asks, "
                            f"{usage.get('fallbacks', 0)} fallbacks")
    return Panel(rows, title=f"run {view.run} (seed {view.seed}) — {view.status}")


class RichView:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self.experiment: dict[str, Any] = {}
        self.live: Live | None = None
        self.runs: list[RunView] = []

    def warn(self, message: str) -> None:
        """A warning as it happens: the latest three stay under the title."""
        self.experiment["warnings"] = [*self.experiment.get("warnings", [])[-2:], message]
        self.update(self.runs)

    def start(self, experiment: dict[str, Any]) -> None:
        self.experiment = experiment
        self.live = Live(render(experiment, []), console=self.console, auto_refresh=False, transient=False)
        self.live.start()

    def update(self, runs: list[RunView], *, final: bool = False) -> None:
        self.runs = runs
        if self.live is not None:
            self.live.update(render(self.experiment, runs), refresh=True)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


class LogView:
    """One structured line per run every few seconds, and one when a run ends."""

    def __init__(self, every_seconds: float = 2.0) -> None:
        self.log = structlog.get_logger("agentsim")
        self.every = every_seconds
        self.last: dict[int, float] = {}
        self.ended: set[int] = set()

    def warn(self, message: str) -> None:
        self.log.warning("backend_warning", message=message)

    def start(self, experiment: dict[str, Any]) -> None:
        self.log.info("experiment_started", **experiment,
                      stand_in=str(experiment.get("backend", "")).startswith("stand-in"))

    def update(self, runs: list[RunView], *, final: bool = False) -> None:
        now = time.monotonic()
        for view in runs:
            fields = {
                "run": view.run, "seed": view.seed, "round": view.rounds_done, "interactions": view.interactions,
                "success_rate": round(view.metrics.get("success_rate", 0.0), 3), "calls": view.usage.get("calls", 0),
                "invalid_replies": view.usage.get("invalid_replies", 0),
            }
            if view.usage.get("cost_usd") or view.usage.get("cache_hits") or view.usage.get("retries"):
                fields.update(cost_usd=view.usage.get("cost_usd"), cache_hits=view.usage.get("cache_hits"),
                              retries=view.usage.get("retries"))
            if view.status != "running":
                if view.run not in self.ended:
                    self.ended.add(view.run)
                    ended = self.log.info if view.status == "done" else self.log.warning
                    ended("run_ended", status=view.status, stop_reason=view.stop_reason,
                                  **fields, **dict(view.metrics.get("lines", [])))
            elif now - self.last.get(view.run, 0.0) >= self.every:
                self.last[view.run] = now
                self.log.info("run_progress", **fields)

    def stop(self) -> None:
        return None


def configure_logging() -> None:
    structlog.configure(
        processors=[structlog.processors.TimeStamper(fmt="iso"), structlog.processors.add_log_level,
                    structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event"])],
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
