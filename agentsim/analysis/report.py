"""`python -m agentsim report DIR`: figures (PNG, each with its data as CSV) and one
self-contained HTML report for whatever the directory's runs contain.

The report is a list of sections. A section says when it applies (from the experiments and
measurement outputs found under DIR) and builds figures and tables; the core only collects,
writes and lays them out. A new kind of scenario (the SIGN game, network topologies) adds
its sections with `register_section` from its own module, without editing this one:

    @register_section("sign_payoffs", "Payoffs by generation", order=60,
                      applies=lambda context: any(e.scenario_name == "sign" for e in context.experiments))
    def sign_payoffs(context: ReportContext) -> None:
        context.add_figure(...)

A game family keeps its sections in its package and names their modules when it registers
(`Family(report_sections=...)`, agentsim/games/__init__.py): the naming game's in
agentsim/games/naming/report.py, SIGN's in agentsim/games/sign/report.py. Before a report, the
framework's modules of `agentsim.analysis` (the usage section), every family's section modules and
those named in the environment variable AGENTSIM_REPORT_SECTIONS (comma-separated) are imported.
"""

from __future__ import annotations

import base64
import csv
import html
import importlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure as MplFigure

from .. import analysis
from ..errors import UserError
from ..games import OPTIONAL_EXTRAS, report_section_modules
from ..llm.providers import all_on_the_stand_in
from ..session import RULE_AGENTS
from .recorded import RecordedExperiment, find_experiments, read_artifacts

REPORT_DIR = "report"
REPORT_HTML = "report.html"
REPORT_INDEX = "report.json"


@dataclass
class FigureItem:
    name: str
    title: str
    caption: str
    png: Path
    csv: Path
    columns: list[str]
    rows: list[list[Any]]


@dataclass
class TableItem:
    name: str
    title: str
    caption: str
    csv: Path
    columns: list[str]
    rows: list[list[Any]]


@dataclass
class ReportContext:
    """What sections read (experiments, measurement outputs) and where they write."""

    root: Path
    out: Path
    experiments: list[RecordedExperiment]
    artifacts: dict[str, list[tuple[Path, Any]]]
    items: list[tuple[str, FigureItem | TableItem]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    section: str = ""
    memo: dict[str, Any] = field(default_factory=dict)  # what several sections compute once (the strategy table)

    def figure(self, width: float = 6.4, height: float = 4.2, ncols: int = 1, nrows: int = 1) -> tuple[MplFigure, Any]:
        """A matplotlib figure (no pyplot state) and its axes."""
        figure = MplFigure(figsize=(width, height), layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False)
        return figure, axes

    def panels(self, count: int, *, width: float = 6.4, height: float = 4.0, max_columns: int = 2) -> tuple[MplFigure, list[Any]]:
        """A figure with `count` panels (every one drawn: a figure grows rather than drop a
        panel), `max_columns` to a row; returns the figure and the panels in order."""
        columns = max(1, min(count, max_columns))
        rows = max(1, -(-count // columns))
        figure, axes = self.figure(width=width * columns, height=height * rows, ncols=columns, nrows=rows)
        flat = [axis for row in axes for axis in row]
        for spare in flat[count:]:
            spare.set_axis_off()
        return figure, flat[:count]

    def add_figure(self, name: str, title: str, figure: MplFigure, columns: Sequence[str],
                   rows: Sequence[Sequence[Any]], caption: str = "") -> FigureItem:
        """Save `figure` as NAME.png and its data as NAME.csv."""
        png, data = self.out / f"{name}.png", self.out / f"{name}.csv"
        figure.savefig(png, dpi=110)
        _write_csv(data, columns, rows)
        item = FigureItem(name, title, caption, png, data, list(columns), [list(row) for row in rows])
        self.items.append((self.section, item))
        return item

    def add_table(self, name: str, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  caption: str = "") -> TableItem:
        data = self.out / f"{name}.csv"
        _write_csv(data, columns, rows)
        item = TableItem(name, title, caption, data, list(columns), [list(row) for row in rows])
        self.items.append((self.section, item))
        return item

    def note(self, text: str) -> None:
        self.notes.append((self.section, text))


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    order: int
    applies: Callable[[ReportContext], bool]
    build: Callable[[ReportContext], None]


SECTIONS: dict[str, Section] = {}


def register_section(name: str, title: str, *, order: int,
                     applies: Callable[[ReportContext], bool]
                     ) -> Callable[[Callable[[ReportContext], None]], Callable[[ReportContext], None]]:
    """Add a report section (a decorator on its build function); a later one replaces a name."""
    def decorate(build: Callable[[ReportContext], None]) -> Callable[[ReportContext], None]:
        SECTIONS[name] = Section(name, title, order, applies, build)
        return build
    return decorate


def _load_sections() -> None:
    """Import the framework's modules of `agentsim.analysis` (the usage section), every game
    family's report sections (each family names them when it registers: agentsim.games), then
    the modules named in AGENTSIM_REPORT_SECTIONS."""
    import pkgutil

    framework = [f"{analysis.__name__}.{found.name}" for found in pkgutil.iter_modules(analysis.__path__)
                 if found.name not in ("commands", "report")]
    for module in (*framework, *report_section_modules()):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name not in OPTIONAL_EXTRAS:
                raise  # a broken section must not vanish from the report unnoticed
    for module in filter(None, (name.strip() for name in os.environ.get("AGENTSIM_REPORT_SECTIONS", "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise UserError(f"AGENTSIM_REPORT_SECTIONS names '{module}', which cannot be imported ({error}); fix the name") from None


def build_report(root: Path | str, out: Path | str | None = None) -> dict[str, Any]:
    """Write every applicable section's figures and tables and the HTML report; returns the
    index (also written as report.json): which sections, figures and tables there are."""
    root = Path(root)
    experiments = find_experiments(root)
    artifacts = read_artifacts(root)
    if not experiments and not artifacts:
        raise UserError(f"no runs found under '{root}'; run a scenario first (python -m agentsim scenarios/naming_game.py --out {root})")
    out_dir = Path(out) if out is not None else root / REPORT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    _load_sections()
    context = ReportContext(root, out_dir, experiments, artifacts)
    built = []
    try:
        for section in sorted(SECTIONS.values(), key=lambda section: (section.order, section.name)):
            context.section = section.name
            if section.applies(context):
                section.build(context)
                built.append(section)
    finally:
        for experiment in experiments:
            experiment.close()
    index = {
        "root": str(root),
        "sections": [section.name for section in built],
        "figures": [{"name": item.name, "section": name, "rows": len(item.rows), "png": item.png.name, "csv": item.csv.name}
                    for name, item in context.items if isinstance(item, FigureItem)],
        "tables": [{"name": item.name, "section": name, "rows": len(item.rows), "csv": item.csv.name}
                   for name, item in context.items if isinstance(item, TableItem)],
    }
    (out_dir / REPORT_HTML).write_text(_html(root, built, context), encoding="utf-8")
    (out_dir / REPORT_INDEX).write_text(json.dumps(index, indent=2), encoding="utf-8")
    return index


def significance(p_value: float | None) -> str:
    """The usual marks: *** p < 0.001, ** p < 0.01, * p < 0.05, n.s. otherwise."""
    if p_value is None or math.isnan(p_value):
        return "n.s."
    return "***" if p_value < 0.001 else "**" if p_value < 0.01 else "*" if p_value < 0.05 else "n.s."


def wrap(text: str, width: int = 60) -> str:
    """A title broken into lines of at most `width` characters, so that no title is cut off."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def whole_rounds(axis: Any) -> None:
    """Ticks at whole population rounds only (matplotlib would mark 1.5 on a short run)."""
    from matplotlib.ticker import MaxNLocator

    axis.xaxis.set_major_locator(MaxNLocator(integer=True))


# --- writing -----------------------------------------------------------------------------------
def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        writer.writerows([_cell(value) for value in row] for row in rows)


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return "" if value != value else f"{value:.6g}"
    return "" if value is None else value


_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption, .caption { color: #555; font-size: .92em; margin: .3em 0; }
table { border-collapse: collapse; font-size: .85em; margin: .5em 0; display: block; max-width: 100%; overflow-x: auto; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } details { margin: .3em 0 1em; } .note { color: #8a5a00; }
"""

_PREVIEW_ROWS = 40


def _html(root: Path, sections: list[Section], context: ReportContext) -> str:
    backends = sorted({experiment.backend for experiment in context.experiments})
    stand_in = any(map(all_on_the_stand_in, backends)) and all(all_on_the_stand_in(backend) or backend == RULE_AGENTS
                                                               for backend in backends)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>agentsim report: {html.escape(str(root))}</title><style>{_STYLE}</style></head><body>",
        f"<h1>agentsim report</h1><p>Results under <code>{html.escape(str(root))}</code>: "
        f"{len(context.experiments)} experiment(s), backend(s): {html.escape(', '.join(backends) or 'none recorded')}.</p>",
    ]
    if stand_in:
        parts.append("<p class='note'>Every run here used the built-in stand-in policy, not a language model: "
                     "the figures show the stand-in's documented rule"
                     + (" (and the rule agents of theory baselines)" if RULE_AGENTS in backends else "") + ".</p>")
    for section in sections:
        parts.append(f"<section id='section-{section.name}'><h2>{html.escape(section.title)}</h2>")
        for name, text in context.notes:
            if name == section.name:
                parts.append(f"<p class='note'>{html.escape(text)}</p>")
        for name, item in context.items:
            if name != section.name:
                continue
            if isinstance(item, FigureItem):
                encoded = base64.b64encode(item.png.read_bytes()).decode("ascii")
                parts.append(f"<figure id='figure-{item.name}' data-rows='{len(item.rows)}'>"
                             f"<h3>{html.escape(item.title)}</h3>"
                             f"<img alt='{html.escape(item.title)}' src='data:image/png;base64,{encoded}'>"
                             f"<figcaption>{html.escape(item.caption)} Data: <code>{item.csv.name}</code>.</figcaption>"
                             f"<details><summary>data ({len(item.rows)} rows)</summary>"
                             f"{_table_html(item.name, item.columns, item.rows)}</details></figure>")
            else:
                parts.append(f"<div class='table' id='table-{item.name}' data-rows='{len(item.rows)}'>"
                             f"<h3>{html.escape(item.title)}</h3><p class='caption'>{html.escape(item.caption)} "
                             f"Data: <code>{item.csv.name}</code>.</p>{_table_html(item.name, item.columns, item.rows)}</div>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _table_html(name: str, columns: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(_cell(value)))}</td>" for value in row) + "</tr>"
                   for row in rows[:_PREVIEW_ROWS])
    more = f"<p class='caption'>first {_PREVIEW_ROWS} of {len(rows)} rows</p>" if len(rows) > _PREVIEW_ROWS else ""
    return f"<table data-name='{html.escape(name)}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"
