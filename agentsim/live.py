"""The live terminal view (rich), and structured log lines (structlog) where there is no terminal.

The view draws from immutable `RunView` snapshots that the runner hands over after each
population round (at most four times a second), on the event loop's own thread: one `Live`
with auto-refresh off, fed a renderable built by the pure function `render`.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from typing import Any, TextIO, cast

import structlog
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .llm.providers import all_on_the_stand_in
from .progress import RunView
from .session import RULE_AGENTS

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


def clock(seconds: float) -> str:
    """A duration as a clock reads it: 45s, 3m07s, 2h05m."""
    seconds = max(0, int(seconds + 0.5))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def eta(experiment: dict[str, Any], runs: list[RunView], elapsed_s: float) -> float | None:
    """Seconds left at the pace so far, if every run went to its last round: an upper bound
    (a run that reaches consensus or flips stops early). None before the first round."""
    done = sum(min(view.rounds_done, view.max_rounds) for view in runs if view.status == "running")
    done += sum(view.max_rounds for view in runs if view.status != "running")
    total = float(sum(view.max_rounds for view in runs))
    if runs:
        total += max(0, int(experiment.get("runs") or 0) - len(runs)) * (total / len(runs))
    if done <= 0 or elapsed_s <= 0:
        return None
    return max(0.0, elapsed_s * (total - done) / done)


def sweep_progress(runs: list[RunView], planned: int) -> str:
    """A Ray sweep as a whole: its runs by status, and the workers and hosts running them."""
    counts = Counter(view.status for view in runs)
    counts["waiting"] += max(0, planned - len(runs))
    running = [view.worker for view in runs if view.status == "running" and view.worker]
    hosts = {worker.rpartition(":")[0] for worker in running}
    statuses = ", ".join(f"{counts[status]} {status}" for status in ("done", "running", "waiting") if counts[status])
    others = ", ".join(f"{count} {status}" for status, count in sorted(counts.items())
                       if status not in ("done", "running", "waiting"))
    workers = len(set(running))
    return (f"Ray sweep: {statuses}{', ' + others if others else ''} of {planned}; "
            f"{workers} worker{'' if workers == 1 else 's'} on {len(hosts)} host{'' if len(hosts) == 1 else 's'}")


def _line(*parts: str | tuple[str, str]) -> Text:
    text = Text.assemble(*parts)
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def render(experiment: dict[str, Any], runs: list[RunView], *, elapsed_s: float | None = None,
           height: int = 24, width: int = 80) -> RenderableType:
    """The whole view, in at most `height` lines (24 by default) of any `width` from 80: the
    table of runs shows as many as fit and counts the others."""
    backend = str(experiment.get("backend", "?"))
    stand_in = bool(experiment.get("stand_in", all_on_the_stand_in(backend)))  # every agent on it (runner.stand_in)
    rules = backend == RULE_AGENTS
    header = [_line((f"{experiment.get('scenario', '?')}", "bold"), "  backend ",
                    (backend, "bold yellow" if stand_in else "bold"),
                    (" (built-in stand-in rules, not an LLM)" if stand_in else
                     " (theory: every agent follows a rule)" if rules else "", "yellow"))]
    timing = ""
    if elapsed_s is not None:
        timing = f"  elapsed {clock(elapsed_s)}"
        left = eta(experiment, runs, elapsed_s) if runs and any(view.status == "running" for view in runs) else None
        if left is not None:
            timing += f"  ETA ≤ {clock(left)}"
    settings = f"seed {experiment.get('seed')}  runs {experiment.get('runs')}{timing}"
    out = f"→ {experiment.get('out', '')}"
    header.append(_line(f"{settings}  {out}"))
    where = len(header) - 1  # split below if the line is too long and there is a line to spare
    if any(view.worker for view in runs):
        header.append(_line(sweep_progress(runs, int(experiment.get("runs") or len(runs)))))
    header.extend(_line((str(note), "cyan")) for note in experiment.get("notes", []))
    estimated = experiment.get("estimate")
    if isinstance(estimated, dict) and estimated.get("cost_usd") is not None:
        spent = sum(float(view.usage.get("cost_usd") or 0.0) for view in runs)
        header.append(_line((f"estimate ${estimated['cost_usd']:.4f} (to the end ${estimated.get('cost_usd_upper') or 0:.4f})"
                             f", spent ${spent:.4f}", "cyan")))
    header.extend(_line((f"warning: {message}", "bold red")) for message in experiment.get("warnings", []))
    focus = next((view for view in runs if view.status == "running"), runs[-1]) if runs else None
    panel, panel_height = _run_panel(focus) if focus is not None else (None, 0)
    spare = height - 2 - len(header) - panel_height - (4 if len(runs) > 1 else 0)  # (a table: heading, 2 rows, more)
    if len(settings) + 2 + len(out) > width - 4 and spare >= 1:  # (the border and padding take 4)
        header[where:where + 1] = [_line(settings), _line(out)]  # the output directory whole: the user types it next
    if focus is None or panel is None:
        return Panel(Group(*header), title="agentsim")
    parts: list[RenderableType] = list(header)
    if len(runs) > 1:
        room = max(1, height - 2 - len(header) - panel_height - 2)
        parts.append(_runs_table(runs, focus, room, int(experiment.get("runs") or len(runs))))
    parts.append(panel)
    return Panel(Group(*parts), title="agentsim")


def _runs_table(runs: list[RunView], focus: RunView, room: int, planned: int) -> RenderableType:
    """One row per run, as many as `room` allows (the running ones first, the focused one
    always), then one line counting the rest."""
    ordered = sorted(runs, key=lambda view: (view is not focus, view.status != "running", view.run))
    shown = ordered[:room] if len(ordered) + (planned > len(runs)) <= room else ordered[:max(1, room - 1)]
    table = Table(box=None, pad_edge=False, show_edge=False)
    cells = any(view.cell for view in runs)
    short = short_cells([view.cell for view in runs])  # values only: the focused run's title names the keys
    for column in ("run", "seed", *(("cell",) if cells else ()), "status", "round", "success", "leading", "state"):
        table.add_column(column, no_wrap=column != "state", overflow="fold" if column == "state" else "ellipsis",
                         max_width=20 if column == "cell" else None,
                         min_width=None if column in ("cell", "state") else len("running") if column == "status"
                         else len(column))
    for view in sorted(shown, key=lambda view: view.run):
        shares = view.metrics.shares
        leading = max(shares, key=shares.__getitem__) if shares else "-"
        rate = view.metrics.success_rate
        success = f"{rate:.0%}" if rate is not None else "-"  # none: not 0%
        table.add_row(str(view.run), str(view.seed), *((short.get(view.cell, view.cell),) if cells else ()), view.status,
                      f"{view.rounds_done}/{view.max_rounds}", success, leading,
                      (view.stop_reason or "").replace("_", " "))  # words wrap in a narrow terminal
    hidden = [view for view in runs if view not in shown]
    waiting = max(0, planned - len(runs))
    if not hidden and not waiting:
        return table
    counts = Counter(view.status for view in hidden)
    if waiting:
        counts["waiting"] += waiting
    more = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    return Group(table, _line((f"… {len(hidden) + waiting} more runs: {more}", "dim")))


def short_cells(cells: list[str]) -> dict[str, str]:
    """Grid cells ("condition=nl, memory_length=0") as their values only ("nl, 0") where every
    cell names the same keys, so that a table row at 80 columns shows what tells them apart."""
    parsed = {cell: [part.partition("=") for part in cell.split(", ")] for cell in set(cells) if cell}
    keys = {tuple(key for key, _sep, _value in parts) for parts in parsed.values()}
    if len(keys) != 1 or not all(sep for parts in parsed.values() for _key, sep, _value in parts):
        return {}
    return {cell: ", ".join(value for _key, _sep, value in parts) for cell, parts in parsed.items()}


_SHOWN_NAMES = 3


def _run_panel(view: RunView) -> tuple[RenderableType, int]:
    """The focused run's panel and its height in lines."""
    metrics, usage = view.metrics, view.usage
    rows = Table.grid(padding=(0, 1))
    labels = ["progress", "stopped", "success", "names", "calls", "latency", "backend", "replies",
              metrics.shares_label, *(label for label, _text in metrics.lines)]
    rows.add_column(style="bold", justify="right", no_wrap=True, min_width=min(14, max(map(len, labels))))
    rows.add_column(no_wrap=True, overflow="ellipsis")
    total = max(view.max_rounds, 1)
    progress = Table.grid(padding=(0, 1))
    progress.add_column(no_wrap=True)
    progress.add_column(no_wrap=True, overflow="ellipsis")
    progress.add_row(ProgressBar(total=total, completed=min(view.rounds_done, total), width=20),
                     f"round {view.rounds_done}/{view.max_rounds}, {view.interactions} interactions")
    rows.add_row("progress", progress)
    if view.stop_reason:  # its own line: at 80 columns the progress line has no room left for it
        rows.add_row("stopped", Text(view.stop_reason.replace("_", " ")))
    if metrics.success_rate is not None:
        rows.add_row("success", f"{metrics.success_rate:.0%}  {sparkline(list(metrics.success_history[-40:]))}")
    shares = metrics.shares
    if shares:
        ranked = sorted(shares.items(), key=lambda item: -item[1])
        bars = Table.grid(padding=(0, 1))
        bars.add_column(no_wrap=True, overflow="ellipsis", max_width=12)
        for name, share in ranked[:_SHOWN_NAMES]:
            bars.add_row(Text(str(name), style="bold"), ProgressBar(total=1.0, completed=share, width=20), f"{share:.0%}")
        rest = sum(share for _name, share in ranked[_SHOWN_NAMES:])
        if len(ranked) > _SHOWN_NAMES:
            bars.add_row(Text(f"{len(ranked) - _SHOWN_NAMES} others", style="dim"),
                         ProgressBar(total=1.0, completed=rest, width=20), f"{rest:.0%}")
        rows.add_row(metrics.shares_label or "names", bars)
        if metrics.shares_note:
            rows.add_row("", Text(metrics.shares_note, style="dim"))
    for label, text in metrics.lines:
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
    names = min(len(shares), _SHOWN_NAMES) + (len(shares) > _SHOWN_NAMES) + bool(shares and metrics.shares_note)
    lines = 1 + bool(view.stop_reason) + (metrics.success_rate is not None) + names + len(metrics.lines) + 3 + bool(
        usage.get("cost_usd") or usage.get("cache_hits") or usage.get("retries") or usage.get("errors"))
    cell = f", {view.cell}" if view.cell else ""
    return Panel(rows, title=f"run {view.run} (seed {view.seed}{cell}) — {view.status}"), lines + 2


def outcome_lines(*, outcome: str, exit_code: int, out: str, runs: list[dict[str, Any]], message: str = "") -> list[str]:
    """What a finished experiment says last: its runs by status and stop reason, its calls,
    and the next step."""
    statuses = Counter(str(run.get("status")) for run in runs)
    reasons = Counter(str(run.get("stop_reason")) for run in runs if run.get("status") == "done")
    calls = sum(int(run.get("calls") or 0) for run in runs)
    fallbacks = sum(int(run.get("fallbacks") or 0) for run in runs)
    said = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items())) or "none recorded"
    why = ", ".join(f"{reason.replace('_', ' ')} {count}" for reason, count in sorted(reasons.items()))
    lines = [f"{len(runs)} run{'' if len(runs) == 1 else 's'}: {said}{f' ({why})' if why else ''}; "
             f"{calls} calls, {fallbacks} fallbacks; results in {out}"]
    if statuses.get("done"):
        lines.append(f"next: python -m agentsim report {out}")
    if outcome != "user_error" and (outcome != "done" or exit_code):  # (a user's mistake: its line names the fix)
        lines.append(f"to continue: python -m agentsim --resume --out {out}")
    return lines


class RichView:
    def __init__(self, console: Console | None = None, *, notes: list[str] | None = None) -> None:
        self.console = console or Console()
        self.notes = list(notes or [])  # lines of a larger task under the title (a critical-mass search's step)
        self.experiment: dict[str, Any] = {}
        self.live: Live | None = None
        self.runs: list[RunView] = []
        self.started = time.monotonic()

    def warn(self, message: str) -> None:
        """A warning as it happens: the latest three stay under the title."""
        self.experiment["warnings"] = [*self.experiment.get("warnings", [])[-2:], message]
        self.update(self.runs)

    def start(self, experiment: dict[str, Any]) -> None:
        self.experiment = experiment | ({"notes": self.notes} if self.notes else {})
        self.started = time.monotonic()
        self.live = Live(self._render([]), console=self.console, auto_refresh=False, transient=False)
        self.live.start()

    def update(self, runs: list[RunView], *, final: bool = False) -> None:
        self.runs = runs
        if self.live is not None:
            self.live.update(self._render(runs), refresh=True)

    def _render(self, runs: list[RunView]) -> RenderableType:
        return render(self.experiment, runs, elapsed_s=time.monotonic() - self.started, height=self.console.height,
                      width=self.console.width)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def conclude(self, **outcome: Any) -> None:
        """Below the last picture of the runs: the summary and the next step (a failure's own
        line follows on stderr)."""
        for line in outcome_lines(**outcome):
            self.console.print(Text(line, style="bold" if line.startswith("next") else ""))


class LogView:
    """One structured line per run every few seconds, and one when a run ends."""

    def __init__(self, every_seconds: float = 2.0) -> None:
        self.log = structlog.get_logger("agentsim")
        self.every = every_seconds
        self.last: dict[int, float] = {}
        self.ended: set[int] = set()
        self.experiment: dict[str, Any] = {}
        self.started = time.monotonic()

    def warn(self, message: str) -> None:
        self.log.warning("backend_warning", message=message)

    def start(self, experiment: dict[str, Any]) -> None:
        self.experiment = experiment
        self.started = time.monotonic()
        self.log.info("experiment_started", **({"stand_in": all_on_the_stand_in(str(experiment.get("backend", "")))}
                                               | experiment | {"rule_agents": experiment.get("backend") == RULE_AGENTS}))

    def update(self, runs: list[RunView], *, final: bool = False) -> None:
        now = time.monotonic()
        left = eta(self.experiment, runs, now - self.started) if runs else None
        for view in runs:
            fields: dict[str, Any] = {
                "run": view.run, "seed": view.seed, **({"cell": view.cell} if view.cell else {}),
                **({"worker": view.worker} if view.worker else {}),
                "round": view.rounds_done, "interactions": view.interactions,
                # (a game without a notion of success, the commons or the donor game, shows none: not 0)
                **({"success_rate": round(view.metrics.success_rate, 3)} if view.metrics.success_rate is not None else {}),
                "calls": view.usage.get("calls", 0), "invalid_replies": view.usage.get("invalid_replies", 0),
                "fallbacks": view.usage.get("fallbacks", 0),  # beside every share: never inside one
            }
            if view.usage.get("cost_usd") or view.usage.get("cache_hits") or view.usage.get("retries"):
                fields.update(cost_usd=view.usage.get("cost_usd"), cache_hits=view.usage.get("cache_hits"),
                              retries=view.usage.get("retries"))
            if view.status != "running":
                if view.run not in self.ended:
                    self.ended.add(view.run)
                    ended = self.log.info if view.status == "done" else self.log.warning
                    ended("run_ended", status=view.status, stop_reason=view.stop_reason,
                          **fields, **game_fields(view.metrics.lines, {*fields, "status", "stop_reason"}))
            elif now - self.last.get(view.run, 0.0) >= self.every:
                self.last[view.run] = now
                self.log.info("run_progress", **fields, elapsed_s=round(now - self.started, 1),
                              **({"eta_s": round(left, 1)} if left is not None else {}))
        if any(view.worker for view in runs) and (final or now - self.last.get(0, 0.0) >= self.every):
            self.last[0] = now  # (run numbers start at 1: 0 is the sweep's own line)
            self.log.info("sweep_progress", progress=sweep_progress(runs, int(self.experiment.get("runs") or len(runs))))

    def stop(self) -> None:
        return None

    def conclude(self, *, outcome: str, exit_code: int, out: str, runs: list[dict[str, Any]], message: str = "") -> None:
        """The last line: the experiment's outcome (done, stopped, failed, interrupted,
        user_error, ...), its exit code, its runs by status, why it stopped (`message`, the
        command's one line) and the next step."""
        lines = outcome_lines(outcome=outcome, exit_code=exit_code, out=out, runs=runs)
        (self.log.info if outcome == "done" and not exit_code else self.log.warning)(
            "experiment_ended", outcome=outcome, exit_code=exit_code, out=out, runs=len(runs),
            statuses=dict(Counter(str(run.get("status")) for run in runs)),
            calls=sum(int(run.get("calls") or 0) for run in runs),
            fallbacks=sum(int(run.get("fallbacks") or 0) for run in runs),
            **({"message": message} if message else {}),
            next=next((line.partition(": ")[2] for line in lines[1:]), ""))


# Names a log line's renderer or structlog itself gives: never a game's field.
_LOG_OWN = frozenset({"event", "timestamp", "level", "logger", "method_name"})


def game_fields(lines: tuple[tuple[str, str], ...], taken: set[str]) -> dict[str, str]:
    """A game's labelled lines (`LiveFigures.lines`) as log fields: each label a `key=value` key
    (lower case, its words joined by `_`: "agreed limit" is `agreed_limit`), and one a line
    already has (`round`, `calls`, `fallbacks`...) prefixed with `game_`, so that a game's label
    never replaces a field of the line nor breaks it."""
    fields: dict[str, str] = {}
    for label, text in lines:
        key = re.sub(r"[^0-9a-z]+", "_", label.lower()).strip("_") or "line"
        if key in taken or key in _LOG_OWN or key in fields:
            key = f"game_{key}"
        number, base = 2, key
        while key in taken or key in fields:
            key, number = f"{base}_{number}", number + 1
        fields[key] = text
    return fields


def configure_logging(log_format: str = "text") -> None:
    """The log lines, on stderr: `key=value` text, or one JSON object per line (`json`)."""
    renderer: Any = (structlog.processors.JSONRenderer() if log_format == "json" else
                     structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event"]))
    structlog.configure(
        processors=[structlog.processors.TimeStamper(fmt="iso"), structlog.processors.add_log_level, renderer],
        logger_factory=structlog.PrintLoggerFactory(file=cast(TextIO, QuietStream(sys.stderr))),
        cache_logger_on_first_use=True,
    )


class QuietStream:
    """A stream whose reader may go away (`2>&1 | head -1`): the lines after that are dropped,
    and the run goes on recording rather than failing on a log line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream: TextIO | None = stream

    def write(self, text: str) -> int:
        if self.stream is not None:
            try:
                self.stream.write(text)
            except (BrokenPipeError, ValueError):  # a closed pipe, or a closed stream
                self.stream = None
        return len(text)

    def flush(self) -> None:
        if self.stream is not None:
            try:
                self.stream.flush()
            except (BrokenPipeError, ValueError):
                self.stream = None
