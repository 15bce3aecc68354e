"""The commons' report section: resource over time per run (Fig. 3), Kaplan-Meier survival
curves, each villager's catch per month (Fig. 4), and the metrics by model and condition
(Tables 1-3: Table 1 the default setting, Table 2 universalization, Table 3 over-usage with
and without communication)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from ...analysis.recorded import RecordedExperiment
from ...analysis.report import ReportContext, register_section
from .metrics import kaplan_meier


def commons_applies(context: ReportContext) -> bool:
    return any(experiment.scenario_name == "commons" for experiment in context.experiments)


def _runs(context: ReportContext) -> list[dict[str, Any]]:
    """Every finished commons run, with the experiment's backend label as its model."""
    found = []
    for experiment in context.experiments:
        if experiment.scenario_name != "commons":
            continue
        for row in experiment.runs:
            summary = row["summary"]
            if "survival_months" in summary:
                found.append(summary | {"model": _model(experiment, summary), "directory": experiment.directory.name})
    return found


def _model(experiment: RecordedExperiment, summary: dict[str, Any]) -> str:
    models = sorted((summary.get("by_model") or {}).keys())
    return models[0] if len(models) == 1 else experiment.backend


def _group(run: dict[str, Any]) -> tuple[str, str, str]:
    return run.get("resource", "fishing"), run["model"], run.get("condition", "default")


def _mean_sd(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def commons_section(context: ReportContext) -> None:
    runs = _runs(context)
    if not runs:
        context.note("No finished commons run.")
        return
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        groups[_group(run)].append(run)
    ordered = sorted(groups)
    _resource_over_time(context, ordered, groups)
    _survival_curves(context, ordered, groups)
    _catches(context, ordered, groups)
    _metrics_table(context, ordered, groups)
    _by_model_table(context, runs)


def _label(group: tuple[str, str, str]) -> str:
    resource, model, condition = group
    return f"{model} · {condition}" + ("" if resource == "fishing" else f" · {resource}")


def _resource_over_time(context: ReportContext, ordered: list[tuple[str, str, str]],
                        groups: dict[tuple[str, str, str], list[dict[str, Any]]]) -> None:
    columns = len(ordered)
    figure, axes = context.figure(width=min(4.2 * columns, 16), height=3.6, ncols=columns)
    rows = []
    for column, group in enumerate(ordered):
        axis = axes[0][column]
        for run in groups[group]:
            stock = run.get("stock") or []
            months = list(range(1, len(stock) + 1))
            after = stock + ([0] if run.get("collapse_month") else [])
            axis.plot(list(range(1, len(after) + 1)), after, marker="o", markersize=2.5, linewidth=1, alpha=0.8)
            rows += [[_label(group), run["directory"], run["run"], month, amount] for month, amount in zip(months, stock)]
        axis.set_title(_label(group), fontsize=9)
        axis.set_xlabel("month")
        axis.set_ylim(0, 105)
        axis.set_xlim(0.5, max([12] + [len(run.get("stock") or []) for run in groups[group]]) + 0.5)  # newcomer: 15
    axes[0][0].set_ylabel("resource at the start of the month")
    context.add_figure("commons_resource", "Resource over time, per run (Fig. 3)", figure,
                       ["group", "experiment", "run", "month", "stock"], rows,
                       caption="The stock at the start of each month; a run that collapsed ends at 0.")


def _survival_curves(context: ReportContext, ordered: list[tuple[str, str, str]],
                     groups: dict[tuple[str, str, str], list[dict[str, Any]]]) -> None:
    figure, axes = context.figure(width=6.4, height=4.0)
    axis = axes[0][0]
    rows = []
    for number, group in enumerate(ordered):
        times = [run["survival_months"] for run in groups[group]]  # a truncated run's: censored where it stopped
        events = [run.get("collapse_month") is not None for run in groups[group]]
        curve = kaplan_meier(times, events)
        horizon = max(times)
        steps = curve + [(horizon, curve[-1][1])]
        axis.step([month for month, _ in steps], [share for _, share in steps], where="post", label=_label(group),
                  linestyle=("-", "--", ":", "-.")[number % 4], linewidth=2.2 - 0.3 * (number % 4))
        rows += [[_label(group), month, round(share, 4), len(times)] for month, share in curve]
    axis.set_xlabel("month")
    axis.set_ylabel("share of runs not collapsed")
    axis.set_ylim(-0.02, 1.05)
    axis.legend(fontsize=7)
    context.add_figure("commons_survival", "Survival (Kaplan-Meier)", figure, ["group", "month", "survival", "runs"], rows,
                       caption="Runs that reached the horizon, or were stopped (truncated) without a collapse, are "
                               "censored at their last month.")


def _catches(context: ReportContext, ordered: list[tuple[str, str, str]],
             groups: dict[tuple[str, str, str], list[dict[str, Any]]]) -> None:
    """Fig. 4: each villager's catch per month (mean over runs), beside the stock before fishing."""
    columns = len(ordered)
    figure, axes = context.figure(width=min(4.2 * columns, 16), height=3.6, ncols=columns)
    rows = []
    for column, group in enumerate(ordered):
        axis = axes[0][column]
        by_villager: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        for run in groups[group]:
            for month, caught in enumerate(run.get("catches") or [], start=1):
                for name, amount in caught.items():
                    by_villager[name][month].append(amount)
        for name in sorted(by_villager):
            months = sorted(by_villager[name])
            means = [statistics.fmean(by_villager[name][month]) for month in months]
            axis.plot(months, means, marker="o", markersize=2.5, linewidth=1, label=name)
            rows += [[_label(group), name, month, round(mean, 3)] for month, mean in zip(months, means)]
        axis.set_title(_label(group), fontsize=9)
        axis.set_xlabel("month")
        axis.set_ylim(bottom=0)
        axis.legend(fontsize=6)
    axes[0][0].set_ylabel("catch (mean over runs)")
    context.add_figure("commons_catches", "Each villager's catch per month (Fig. 4)", figure,
                       ["group", "villager", "month", "catch"], rows,
                       caption="With a newcomer, the last villager joins after three months.")


def _truncated(run: dict[str, Any]) -> bool:
    return run.get("outcome") == "truncated"


def _metrics_table(context: ReportContext, ordered: list[tuple[str, str, str]],
                   groups: dict[tuple[str, str, str], list[dict[str, Any]]]) -> None:
    rows = []
    for group in ordered:
        runs = groups[group]
        ended = [run for run in runs if not _truncated(run)]
        resource, model, condition = group
        line: list[Any] = [resource, model, condition, len(ended), len(runs) - len(ended)]
        for key in ("survival_months", "gain", "efficiency", "equality", "over_usage"):
            values = [float(run[key]) for run in ended if run.get(key) is not None]
            scale = 100 if key in ("efficiency", "equality", "over_usage") else 1
            mean, sd = _mean_sd([value * scale for value in values])
            line += [round(mean, 2), round(sd, 2)]
        line.append(round(sum(1 for run in ended if run.get("survived")) / len(ended), 4) if ended else float("nan"))
        line.append(sum(run.get("harvest_fallbacks", 0) for run in runs))
        rows.append(line)
    columns = ["resource", "model", "condition", "runs", "truncated", "survival_months", "survival_months_sd", "gain",
               "gain_sd", "efficiency_%", "efficiency_sd", "equality_%", "equality_sd", "over_usage_%",
               "over_usage_sd", "survival_rate", "harvest_fallbacks"]
    context.add_table("commons_metrics", "Metrics by model and condition (Tables 1-3)", columns, rows,
                      caption="Mean and standard deviation over the runs that ended (a collapse or the horizon); "
                              "runs stopped before (a step cap) are counted as truncated and left out of every "
                              "column but the fallbacks, as the survival curves censor them. Gain is a villager's "
                              "total over the run; efficiency, equality and over-usage in percent. Fallback "
                              "harvests are counted but never analysed as choices.")


def _by_model_table(context: ReportContext, runs: list[dict[str, Any]]) -> None:
    rows = []
    for run in runs:
        models = run.get("by_model") or {}
        if len(models) < 2:
            continue
        for label, values in sorted(models.items()):
            rows.append([run["directory"], run["run"], run.get("condition", "default"), label, values["villagers"],
                         values["gain"], values["equality"], values["over_usage"], run["survival_months"]])
    if rows:
        context.add_table("commons_by_model", "Mixed groups: each model's villagers",
                          ["experiment", "run", "condition", "model", "villagers", "gain", "equality", "over_usage",
                           "survival_months"], rows)


register_section("commons", "GovSim: governance of the commons", order=80, applies=commons_applies)(commons_section)
