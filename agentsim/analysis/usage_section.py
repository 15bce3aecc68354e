"""The report's section on LLM usage, for every game: calls, tokens, fallbacks, latency and cost
by model, from every recorded call."""

from __future__ import annotations

from typing import Any

import numpy as np

from .report import ReportContext, register_section

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]


# --- usage -----------------------------------------------------------------------------------------
def _usage_rows(context: ReportContext) -> list[list[Any]]:
    rows = []
    for experiment in context.experiments:
        for entry in experiment.usage_by_model():
            rows.append([experiment.label, experiment.scenario_name, entry["model"], entry["calls"], entry["prompt_tokens"],
                         entry["completion_tokens"], entry["cached_prompt_tokens"], entry["cache_write_tokens"],
                         entry["invalid_replies"], entry["errors"], entry["decisions"], entry["fallbacks"],
                         round(entry["fallbacks"] / entry["decisions"], 4) if entry["decisions"] else None,
                         entry["latency_p50_s"], entry["latency_p95_s"], entry["cost_usd"]])
    return rows


@register_section("usage", "LLM usage by model", order=90, applies=lambda context: bool(_usage_rows(context)))
def usage(context: ReportContext) -> None:
    rows = _usage_rows(context)
    columns = ["experiment", "scenario", "model", "calls", "prompt_tokens", "completion_tokens", "cached_prompt_tokens",
               "cache_write_tokens", "invalid_replies", "errors",
               "decisions", "fallbacks", "fallback_rate", "latency_p50_s", "latency_p95_s", "cost_usd"]
    context.add_table("table_usage", "Calls, tokens, fallbacks, latency and cost by model", columns, rows,
                      "From every recorded call; cost where the backend reported one, as billed (prompt tokens read "
                      "from or written to the provider's prompt cache, counted in prompt_tokens, at their own "
                      "prices). invalid_replies: replies the game could not use (each re-asked, or a fallback); "
                      "errors: calls that failed with no reply (after retries). A fallback is a decision no "
                      "reply gave (every attempt invalid or failed): it is left out of every choice, share and "
                      "strategy in this report.")
    _estimates(context)
    totals: dict[str, list[float]] = {}
    latencies: dict[str, list[float]] = {}
    for experiment in context.experiments:
        for entry in experiment.usage_by_model():
            latencies.setdefault(entry["model"], []).extend(entry["latencies"])
    for row in rows:
        total = totals.setdefault(row[2], [0, 0, 0, 0, 0])
        for column in range(5):  # calls, prompt and completion tokens, decisions, fallbacks
            total[column] += row[(3, 4, 5, 10, 11)[column]]
    models = list(totals)
    figure, axes = context.figure(width=max(13, 4.2 * len(models)), height=3.6, ncols=4)
    calls, tokens, fell, latency = axes[0]
    calls.bar(models, [totals[model][0] for model in models], color=COLOURS[0])
    calls.set(title="calls")
    tokens.bar(models, [totals[model][1] + totals[model][2] for model in models], color=COLOURS[1])
    tokens.set(title="tokens (prompt + completion)")
    rates = [totals[model][4] / totals[model][3] if totals[model][3] else 0.0 for model in models]
    bars = fell.bar(models, rates, color=COLOURS[3])
    fell.bar_label(bars, labels=[f"{totals[model][4]} of {totals[model][3]}" for model in models], fontsize=7)
    fell.set(title="fallback rate", ylim=(0, max(0.05, *rates) * 1.25))
    seconds = [np.maximum(np.asarray(latencies.get(model) or [0.0]), 1e-6) for model in models]
    latency.boxplot(seconds, tick_labels=models, showfliers=False, whis=(5, 95))
    latency.set(title="latency per call", ylabel="seconds", yscale="log")
    for axis in axes[0]:
        axis.tick_params(axis="x", labelrotation=20 if max(map(len, models)) > 12 else 0)
    context.add_figure("usage_by_model", "Calls, tokens, fallbacks and latency by model", figure,
                       ["model", "calls", "prompt_tokens", "completion_tokens", "decisions", "fallbacks", "latency_p05_s",
                        "latency_p50_s", "latency_p95_s"],
                       [[model, *totals[model], *(float(np.percentile(values, q)) for q in (5, 50, 95))]
                        for model, values in zip(models, seconds)],
                       "Summed over every experiment in the directory. Fallbacks (decisions no reply gave) are left out "
                       "of every choice. Latency of every recorded call, retries included: boxes span the quartiles, "
                       "whiskers 5-95% (the stand-in answers in microseconds).")


def _estimates(context: ReportContext) -> None:
    """The estimate made before the run (`estimate --out DIR`), beside what was spent."""
    rows = []
    for experiment in context.experiments:
        estimated = experiment.experiment.get("estimate")
        if not isinstance(estimated, dict) or not isinstance(estimated.get("totals"), dict):
            continue
        totals = estimated["totals"]
        summaries = [summary for summary in experiment.summaries() if isinstance(summary, dict)]
        spent = [usage for summary in summaries for usage in (summary.get("usage_by_backend") or {}).values()]
        rows.append([experiment.label, totals.get("calls"), totals.get("calls_upper"),
                     sum(int(usage.get("calls") or 0) for usage in spent),
                     (totals.get("prompt_tokens") or 0) + (totals.get("completion_tokens") or 0),
                     sum(int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0) for usage in spent),
                     estimated.get("cost_usd"), estimated.get("cost_usd_upper"),
                     round(sum(float(usage.get("cost_usd") or 0.0) for usage in spent), 6)])
    if rows:
        context.add_table("table_estimate", "Estimated before the run, and spent",
                          ["experiment", "calls_estimated", "calls_to_the_end", "calls_spent", "tokens_estimated",
                           "tokens_spent", "cost_estimated_usd", "cost_to_the_end_usd", "cost_spent_usd"], rows,
                          "The estimate `python -m agentsim estimate --out DIR` wrote before the run (played on the "
                          "stand-in with the real prompts), beside what the runs recorded.")
