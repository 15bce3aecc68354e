"""What a run's page shows of it beyond the live view's lines: the charts its paper plots, the
figures it reports, texts worth reading, and how far it is, as declared dataclasses. A game's
readout returns them from `views` (agentsim/parts.py); `python -m agentsim watch` draws them
(agentsim/watch.py, watch.js) and combines the charts of several runs that share a `key`
(`across`: every run's line on one chart, or the runs' mean with its band, by `Views.group`).

A game declares what to plot, never how: the page sizes every chart to the screen (1280 px or a
phone) and colours a name the same in every run (`Views.names`, the game's own order).

The x of a chart is the game's own unit (`Views.unit`: a round, a month, a generation), as the
game numbers it; `Views.periods` maps an x to the store's population rounds it spans, so a click
on a point opens that period's prompts and replies (`transcript`). With no periods, x is the
round as `transcript --round` numbers it.

Every number here is computed from what the store holds (the run's last checkpoint and its
`rounds` lines up to it), so a figure read on the page recomputes from the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

MAX_POINTS = 240  # a series longer than this is drawn from the means of equal runs of x


@dataclass(frozen=True, kw_only=True)
class Series:
    """One line of a chart: `points` (x, y), oldest first; `band` (x, low, high), a range drawn
    under it (a round's lowest to highest choice); `dots` (x, y): single values (each choice);
    `reference`: a line to compare with (a sustainable catch), drawn dashed and grey."""

    name: str
    points: tuple[tuple[float, float], ...] = ()
    band: tuple[tuple[float, float, float], ...] = ()
    dots: tuple[tuple[float, float], ...] = ()
    reference: bool = False


@dataclass(frozen=True, kw_only=True)
class Mark:
    """A labelled vertical line (at x: a flip, a collapse) or, as a `Chart.level`, a horizontal
    one (at y: a threshold, a sustainable catch)."""

    at: float
    label: str


@dataclass(frozen=True, kw_only=True)
class Chart:
    """One chart over the game's unit. `key` names it across runs (charts of one key combine);
    `y_min`/`y_max` bound its axis (a choice's bounds; shares 0 to 1, with `percent`);
    `names`: its series are the game's names (coloured as the game orders them);
    `across`: how the experiment's runs combine ("lines": each run's first series on one chart;
    "mean": each series' mean over the runs with a band of one standard deviation; "": not)."""

    key: str
    title: str
    y_label: str
    series: tuple[Series, ...]
    y_min: float | None = None
    y_max: float | None = None
    percent: bool = False
    names: bool = False
    marks: tuple[Mark, ...] = ()
    levels: tuple[Mark, ...] = ()
    across: Literal["", "lines", "mean"] = ""
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class Stat:
    """A figure the paper reports (efficiency, rounds to agreement): `value` a number the page
    may average over runs (None: not yet), `text` as shown."""

    label: str
    value: float | None
    text: str


@dataclass(frozen=True, kw_only=True)
class Texts:
    """Texts worth reading as they are (a generation's strategies): (label, text) rows."""

    title: str
    rows: tuple[tuple[str, str], ...]


@dataclass(frozen=True, kw_only=True)
class Views:
    """What the page shows of one run. `unit` and `done`/`total` its progress in the game's own
    unit (months, not steps), `state` what it is doing or how it ended in the game's words
    ("month 3 of 12: discussing", "collapsed in month 4"); `group` the condition it is compared
    under (a topology, a SIGN cell); `names` the game's names in its order."""

    unit: str = "round"
    done: float = 0
    total: float | None = None
    state: str = ""
    group: str = ""
    names: tuple[str, ...] = ()
    charts: tuple[Chart, ...] = ()
    stats: tuple[Stat, ...] = ()
    texts: tuple[Texts, ...] = ()
    periods: tuple[tuple[float, int, int], ...] = field(default=())  # (x, first, last store round)


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def thin(points: Sequence[tuple[float, ...]], limit: int = MAX_POINTS) -> tuple[tuple[float, ...], ...]:
    """At most `limit` points: consecutive points merged into their mean (x and every value),
    so a run of 5,000 rounds keeps its shape in a chart 300 pixels wide."""
    if len(points) <= limit:
        return tuple(tuple(point) for point in points)
    step = len(points) / limit
    merged = []
    for index in range(limit):
        chunk = points[int(index * step): max(int((index + 1) * step), int(index * step) + 1)]
        merged.append(tuple(sum(values) / len(values) for values in zip(*chunk, strict=True)))
    return tuple(merged)


def thinned(views: Views) -> dict[str, Any]:
    """The views as JSON-ready data, each series at most MAX_POINTS long (dots: every k-th)."""
    charts = []
    for chart in views.charts:
        series = []
        for line in chart.series:
            dots = line.dots
            if len(dots) > 4 * MAX_POINTS:
                keep = len(dots) // (4 * MAX_POINTS) + 1
                dots = dots[::keep]
            series.append({"name": line.name, "points": [list(point) for point in thin(line.points)],
                           "band": [list(point) for point in thin(line.band)], "dots": [list(point) for point in dots],
                           "reference": line.reference})
        charts.append({"key": chart.key, "title": chart.title, "y_label": chart.y_label, "series": series,
                       "y_min": chart.y_min, "y_max": chart.y_max, "percent": chart.percent, "names": chart.names,
                       "marks": [{"at": mark.at, "label": mark.label} for mark in chart.marks],
                       "levels": [{"at": mark.at, "label": mark.label} for mark in chart.levels],
                       "across": chart.across, "note": chart.note})
    return {"unit": views.unit, "done": views.done, "total": views.total, "state": views.state, "group": views.group,
            "names": list(views.names), "charts": charts,
            "stats": [{"label": stat.label, "value": stat.value, "text": stat.text} for stat in views.stats],
            "texts": [{"title": block.title, "rows": [list(row) for row in block.rows]} for block in views.texts],
            "periods": [list(period) for period in views.periods]}


SHOWN_NAMES = 8  # names drawn one line each in a chart of shares; the rest summed as "other names"


def shares_chart(per_round: Sequence[tuple[float, Mapping[str, int]]], names: Sequence[str], *, note: str = "",
                 key: str = "shares", title: str = "each name's share of the round's choices",
                 across: Literal["", "lines", "mean"] = "mean") -> Chart:
    """Each name's share of every round's choices (x, {name: count}), the most chosen names a
    line each (coloured by their place in `names`), the others summed."""
    totals: dict[str, int] = {}
    for _x, counts in per_round:
        for name, count in counts.items():
            totals[name] = totals.get(name, 0) + count
    order = {name: index for index, name in enumerate(names)}
    ranked = sorted(totals, key=lambda name: (-totals[name], order.get(name, len(order)), name))
    shown, rest = ranked[:SHOWN_NAMES], ranked[SHOWN_NAMES:]
    sums = [(x, counts, sum(counts.values())) for x, counts in per_round]
    series = [Series(name=name, points=tuple((x, counts.get(name, 0) / total) for x, counts, total in sums if total))
              for name in sorted(shown, key=lambda name: (order.get(name, len(order)), name))]
    if rest:
        series.append(Series(name="other names", points=tuple(
            (x, sum(counts.get(name, 0) for name in rest) / total) for x, counts, total in sums if total)))
    return Chart(key=key, title=title, y_label="share", percent=True, y_min=0, y_max=1, names=True, across=across,
                 series=tuple(series), note="; ".join(part for part in (note, "fallbacks left out") if part))


def store_round(views: Views | Mapping[str, Any], x: float, round_base: int = 0) -> tuple[int, int]:
    """The store's population rounds (first, last) that the point at `x` spans."""
    periods = views.periods if isinstance(views, Views) else views.get("periods") or ()
    for period in periods:
        if float(period[0]) == float(x):
            return int(period[1]), int(period[2])
    return int(x) - round_base, int(x) - round_base


def _mean_band(runs: Sequence[tuple[bool, Sequence[tuple[float, float]]]]) -> tuple[list[tuple[float, float]],
                                                                                   list[tuple[float, float, float]]]:
    """The mean over runs at each x, and mean ± one standard deviation: a run that ended keeps
    its last value after its end (as the papers average runs that converged early); a run
    still going counts up to where it is."""
    tables = [(ended, dict(points), max((x for x, _ in points), default=None), points[-1][1] if points else None)
              for ended, points in runs]
    xs = sorted({x for _, points in runs for x, _ in points})
    means: list[tuple[float, float]] = []
    band: list[tuple[float, float, float]] = []
    for x in xs:
        values: list[float] = []
        for ended, table, end, last in tables:
            if x in table:
                values.append(table[x])
            elif ended and end is not None and x > end and last is not None:
                values.append(last)
        if not values:
            continue
        mean = sum(values) / len(values)
        spread = math.sqrt(sum((value - mean) ** 2 for value in values) / len(values))
        means.append((x, mean))
        band.append((x, mean - spread, mean + spread))
    return means, band


def _chart_json(chart: Chart, title: str, series: list[dict[str, Any]], note: str) -> dict[str, Any]:
    return {"key": chart.key, "title": title, "y_label": chart.y_label, "series": series, "y_min": chart.y_min,
            "y_max": chart.y_max, "percent": chart.percent, "names": chart.names, "marks": [],
            "levels": [{"at": mark.at, "label": mark.label} for mark in chart.levels], "across": chart.across,
            "note": note}


def combine(runs: Sequence[tuple[int, bool, Views, str]]) -> list[dict[str, Any]]:
    """The experiment's charts across its runs (run, ended, views, group): for a chart declared
    `across="lines"`, every run's first series on one chart; for `across="mean"`, each
    series' mean over the runs with a band of one standard deviation, a line per group where
    the chart has one series (success by topology), a chart per group where it has several
    (each name's share). Nothing for a single run: its own card shows it."""
    if len(runs) < 2:
        return []
    by_key: dict[str, list[tuple[int, bool, str, Chart]]] = {}
    for run, ended, views, group in runs:
        for chart in views.charts:
            if chart.across:
                by_key.setdefault(chart.key, []).append((run, ended, group, chart))
    combined = []
    for entries in by_key.values():
        template = entries[0][3]
        if template.across == "lines":
            series = [{"name": f"run {run}" + (f" ({group})" if group else ""), "run": run, "group": group,
                       "points": [list(point) for point in thin(chart.series[0].points)], "band": [], "dots": []}
                      for run, _, group, chart in entries if chart.series]
            combined.append(_chart_json(template, f"{template.title}: every run", series, f"{len(series)} runs"))
            continue
        groups = list(dict.fromkeys(group for _, _, group, _ in entries))
        single = all(len(chart.series) <= 1 for _, _, _, chart in entries)
        plans = [(groups, None)] if single else [([group], group) for group in groups]
        for wanted, alone in plans:
            series = []
            for group in wanted:
                members = [(ended, chart) for _, ended, each, chart in entries if each == group]
                names = list(dict.fromkeys(line.name for _, chart in members for line in chart.series))
                for name in names:
                    means, band = _mean_band([(ended, next((line.points for line in chart.series if line.name == name), ()))
                                              for ended, chart in members])
                    label = (group or name) if single else name
                    series.append({"name": label, "group": group, "runs": len(members),
                                   "points": [list(point) for point in thin(means)],
                                   "band": [list(point) for point in thin(band)], "dots": []})
            count = sum(1 for _, _, group, _ in entries if group in wanted)
            if count < 2:
                continue
            title = (f"{template.title}: mean of each group's runs ({count} runs)" if len(wanted) > 1 else
                     f"{template.title}: mean of {count} runs" + (f", {alone}" if alone else ""))
            combined.append(_chart_json(template, title, series, "band: ±1 standard deviation across the runs; "
                                                                 "a run that ended keeps its last value"))
    return combined


def compare(runs: Sequence[tuple[int, bool, Views, str]]) -> dict[str, Any] | None:
    """The runs' figures side by side by group (by topology, by SIGN cell, by condition): each
    numeric figure's mean over the group's runs that have it. None with fewer than two groups."""
    groups = list(dict.fromkeys(group for _, _, _, group in runs))
    if len(groups) < 2:
        return None
    labels: list[str] = []
    percents: set[str] = set()
    for _, _, views, _ in runs:
        for stat in views.stats:
            if stat.value is not None and stat.label not in labels:
                labels.append(stat.label)
            if stat.text.endswith("%"):
                percents.add(stat.label)
    rows = []
    for group in groups:
        members = [views for _, _, views, each in runs if each == group]
        cells = {}
        for label in labels:
            values = [float(stat.value) for views in members for stat in views.stats
                      if stat.label == label and stat.value is not None]
            if not values:
                cells[label] = "–"
                continue
            mean = sum(values) / len(values)
            text = f"{mean:.0%}" if label in percents else f"{mean:.3g}"
            cells[label] = text + (f" ({len(values)} of {len(members)})" if len(values) < len(members) else "")
        rows.append({"group": group, "runs": len(members), "cells": cells})
    return {"labels": labels, "rows": rows}
