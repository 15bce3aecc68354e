"""The naming game's report sections (Flint Ashery et al. 2025): each applies when the
directory holds what it needs, and writes the figure or table the paper shows."""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

import numpy as np

from ...analysis.recorded import RecordedExperiment
from ...analysis.report import ReportContext, register_section, significance, whole_rounds, wrap
from ...analysis.stats import mean_and_sem, proportion_interval
from . import StrategyProbe
from .bias import backend_label, has_own_section, individual_bias, is_free_run, pool_key
from .comprehension_check import ARTIFACT as COMPREHENSION
from .critical_mass import ARTIFACT as CRITICAL_MASS
from .critical_mass import committed_experiments, smallest_from_which
from .recorded import alternative_share_matrix, consensus_names, productions, success_matrix
from .reference import success_curve as registered
from .strategies import State, StrategyTable, state_frequencies, state_label, strategy_table

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]


def _free(context: ReportContext) -> list[RecordedExperiment]:
    return [experiment for experiment in context.experiments if is_free_run(experiment) and experiment.round_stats]


def who(experiment: RecordedExperiment) -> str:
    """Who the agents are: rule agents (theory baselines), else the backend (and the stand-in's
    settings), else the scenario when it is not the LLM naming game."""
    if experiment.rule_agents:
        return f"rule agents ({experiment.scenario_name})"
    return backend_label(experiment)


def _label(experiment: RecordedExperiment) -> str:
    """A legend entry: which experiment (directory and grid cell), who, N, W and runs."""
    params = experiment.params
    return f"{experiment.label}: {who(experiment)}, N={params.get('agents')}, W={len(experiment.names)}, {len(experiment.runs)} runs"


THEORY_RUNS = 1000


def theory_success_curve(agents: int, pool_size: int, rounds: int, *, runs: int = THEORY_RUNS, seed: int = 0) -> np.ndarray | None:
    """The minimal naming game's success rate per population round (the dashed line of Fig.
    1A), from the curve the theory family registered (agentsim.games.naming.reference); None
    otherwise."""
    success_curve = registered()
    if success_curve is None:
        return None
    offered = {"n_agents": agents, "agents": agents, "population_rounds": rounds, "rounds": rounds,
               "pool_size": pool_size, "runs": runs, "seed": seed}
    parameters = inspect.signature(success_curve).parameters
    try:
        curve = np.asarray(success_curve(**{key: value for key, value in offered.items() if key in parameters}), dtype=float)
    except Exception:
        return None
    return curve[:rounds] if curve.ndim == 1 and curve.size else None


# --- Fig. 1A ---------------------------------------------------------------------------------------
@register_section("emergence", "Spontaneous emergence of conventions (Fig. 1A)", order=10,
                  applies=lambda context: bool(_free(context)))
def emergence(context: ReportContext) -> None:
    free = _free(context)
    figure, axes = context.figure(width=7.2, height=4.4 + 0.22 * len(free))
    axis = axes[0][0]
    rows: list[list[Any]] = []
    longest: dict[tuple[int, int], int] = {}
    for experiment in free:
        key = (int(experiment.params.get("agents", 24)), len(experiment.names))
        longest[key] = max(longest.get(key, 0), success_matrix(experiment).shape[1])
    theories = {key: theory_success_curve(*key, rounds) for key, rounds in longest.items()}
    for index, experiment in enumerate(free):
        colour = COLOURS[index % len(COLOURS)]
        matrix = success_matrix(experiment)
        rounds = np.arange(1, matrix.shape[1] + 1)
        mean, sem, counts = mean_and_sem(matrix)
        for run_rates in matrix[:5]:
            axis.plot(rounds, run_rates, color=colour, linewidth=0.6, alpha=0.3)
        axis.fill_between(rounds, mean - sem, mean + sem, color=colour, alpha=0.25, linewidth=0)
        axis.plot(rounds, mean, color=colour, linewidth=2.2, label=_label(experiment))
        params = experiment.params
        theory = theories[(int(params.get("agents", 24)), len(experiment.names))]
        for position, round_ in enumerate(rounds):
            rows.append([experiment.label, who(experiment), params.get("agents"), len(experiment.names),
                         int(round_), mean[position], sem[position], int(counts[position]),
                         None if theory is None or position >= theory.size else theory[position]])
    drawn = [(key, curve) for key, curve in theories.items() if curve is not None]
    for number, ((agents, pool), curve) in enumerate(drawn):
        axis.plot(np.arange(1, curve.size + 1), curve, color="black", linestyle=("--", ":", "-.")[number % 3], linewidth=1.3,
                  label=f"minimal naming game, N={agents}, W={pool} (theory, {THEORY_RUNS} runs)")
    if not drawn:
        context.note("The theory line (minimal naming game) is not drawn: agentsim.games.theory.minimal is not installed.")
    axis.set(xlabel="population round", ylabel="success rate", ylim=(0, 1.02), title="Success rate (mean ± SEM over runs)")
    axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, frameon=False)
    whole_rounds(axis)
    context.add_figure("fig1a_success_rate", "Success rate against population rounds", figure,
                       ["experiment", "agents_are", "agents", "pool_size", "round", "mean_success", "sem", "runs", "theory_success"],
                       rows, "Thick: mean over runs (a converged run keeps its last rate), band: ± one standard error; "
                             "thin: up to five runs; black: the minimal naming game at the same N and W. One line per "
                             "experiment and grid cell.")


# --- Fig. 1B ---------------------------------------------------------------------------------------
@register_section("competition", "Name competition in one run (Fig. 1B)", order=20,
                  applies=lambda context: bool(_free(context)))
def competition(context: ReportContext) -> None:
    free = _free(context)
    figure, panels = context.panels(len(free), width=6.4, height=4.2)
    rows: list[list[Any]] = []
    names_seen: list[str] = []
    for experiment in free:
        names_seen.extend(name for name in experiment.names if name not in names_seen)
    markers = "os^vD<>pxh"
    for axis, experiment in zip(panels, free):
        run = experiment.runs[0]["run"]
        produced = productions(experiment, run)
        names = list(experiment.names)
        shares = np.array([[round_.get(name, 0) / max(1, sum(round_.values())) for name in names] for round_ in produced])
        totals = np.array([max(1, sum(round_.values())) for round_ in produced])
        rounds = np.arange(1, len(produced) + 1)
        for index, name in enumerate(names):
            if shares.size and shares[:, index].max() >= 0.05:
                error = np.sqrt(shares[:, index] * (1 - shares[:, index]) / totals)
                colour = COLOURS[names_seen.index(name) % len(COLOURS)]
                axis.errorbar(rounds, shares[:, index], yerr=error, marker=markers[index % len(markers)], markersize=3,
                              linewidth=1, capsize=1.5, color=colour, label=name)
        axis.set(xlabel="population round", ylabel="share of productions", ylim=(0, 1.02),
                 title=wrap(f"{experiment.label}: {who(experiment)}, run {run}", 55))
        axis.legend(fontsize=7, ncol=2, title="names shown: ≥ 5% in a round", title_fontsize=7)
        whole_rounds(axis)
        for position, round_ in enumerate(rounds):
            shown = dict(zip(names, (float(value) for value in shares[position])))
            rows.append([experiment.label, run, int(round_), *[shown.get(name) for name in names_seen]])
    context.add_figure("fig1b_name_competition", "Name competition in one run", figure,
                       ["experiment", "run", "round", *names_seen], rows,
                       "Each name's share of the productions per population round in the first run of each experiment; "
                       "bars: binomial standard error.")


# --- Fig. 2A ---------------------------------------------------------------------------------------
@register_section("consensus", "Distribution of consensus names (Fig. 2A)", order=30,
                  applies=lambda context: any(experiment.runs for experiment in _free(context)))
def consensus(context: ReportContext) -> None:
    free = [experiment for experiment in _free(context) if experiment.runs]
    figure, panels = context.panels(len(free), width=6.4, height=2.9)
    rows = []
    for index, (axis, experiment) in enumerate(zip(panels, free)):
        tally = Counter(dict.fromkeys(experiment.names, 0))
        tally.update(name or "" for name in consensus_names(experiment))
        runs = sum(tally.values())
        names = sorted(tally, key=lambda name: (-tally[name], name))
        labels = [name or "(none)" for name in names]
        axis.bar(labels, [tally[name] / runs for name in names], color=COLOURS[index % len(COLOURS)])
        axis.set(ylabel="share of runs", ylim=(0, 1), title=wrap(f"{experiment.label}: {who(experiment)}, {runs} runs", 60))
        axis.tick_params(axis="x", labelrotation=45 if len(names) > 8 else 0)
        for name in names:
            rows.append([experiment.label, who(experiment), name or "(none)", tally[name], runs, tally[name] / runs])
    context.add_figure("fig2a_consensus_names", "Consensus names over runs", figure,
                       ["experiment", "agents_are", "name", "runs_with_consensus", "runs", "share"], rows,
                       "The name each run converged on, one panel per experiment and grid cell; (none): no consensus "
                       "within the run's rounds.")


# --- Fig. 2B, S4, S5, Table S1, S2 --------------------------------------------------------------------
@register_section("bias", "Individual against collective bias (Fig. 2B, Tables S1-S2)", order=40,
                  applies=lambda context: bool(individual_bias(context.experiments)))
def bias(context: ReportContext) -> None:
    tests = individual_bias(context.experiments)
    table = []
    for (backend, pool), test in tests.items():
        table.append([backend, " ".join(pool), test.samples, test.test, test.statistic, test.p_value, test.js_distance,
                      "yes" if test.biased else "no", significance(test.p_value),
                      " ".join(f"{name}:{count}" for name, count in zip(test.names, test.counts))])
    context.add_table("table_s1_individual_bias", "Individual bias: first choices with an empty memory",
                      ["backend", "pool", "samples", "test", "statistic", "p_value", "js_distance_base2", "biased_at_5pct",
                       "significance", "counts"],
                      table, "Exact two-sided binomial test against 1/2 for two names, chi-square against uniform for more; "
                             "Jensen-Shannon distance from uniform in bits (base 2).")
    groups = list(tests.items())
    figure, axes = context.figure(width=9, height=3.2 * len(groups), ncols=2, nrows=len(groups))
    free = [experiment for experiment in _free(context) if experiment.runs]
    rows = []
    for index, (key, test) in enumerate(groups):
        names = list(test.names)
        left, right = axes[index][0], axes[index][1]
        shares = [test.shares[name] for name in names]
        intervals = [proportion_interval(count, test.samples) for count in test.counts]
        errors = np.array([[share - low for share, (low, _) in zip(shares, intervals)],
                           [high - share for share, (_, high) in zip(shares, intervals)]])
        left.bar(names, shares, yerr=errors, capsize=3, color=COLOURS[0])
        left.axhline(1 / len(names), color="grey", linestyle=":", linewidth=1, label="uniform")
        left.set(ylim=(0, 1), ylabel="probability",
                 title=wrap(f"{key[0]}: individual, {significance(test.p_value)} ({test.test} p={test.p_value:.3g}, "
                            f"n={test.samples})", 50))
        left.tick_params(axis="x", labelrotation=45 if len(names) > 6 else 0)
        members = [experiment for experiment in free if pool_key(experiment) == key]
        for name, share, (low, high) in zip(names, shares, intervals):
            rows.append([key[0], "individual", name, share, low, high, test.samples, significance(test.p_value)])
        if not members:
            right.set_axis_off()
            right.text(0.5, 0.5, "no free runs with this pool", ha="center", va="center", transform=right.transAxes)
            continue
        tallies = []
        for experiment in members:
            tally = Counter(name or "" for name in consensus_names(experiment))
            tallies.append((experiment, tally, sum(tally.values())))
        shown = names + ([""] if any(tally.get("") for _e, tally, _r in tallies) else [])
        width = 0.8 / len(tallies)
        for number, (experiment, tally, runs) in enumerate(tallies):
            positions = np.arange(len(shown)) + (number - (len(tallies) - 1) / 2) * width
            right.bar(positions, [tally.get(name, 0) / runs for name in shown], width=width,
                      color=COLOURS[(number + 1) % len(COLOURS)], label=f"{experiment.label} ({runs} runs)")
            for name in shown:
                rows.append([key[0], experiment.label, name or "(none)", tally.get(name, 0) / runs, None, None, runs, ""])
        right.set_xticks(range(len(shown)), [name or "(none)" for name in shown],
                         rotation=45 if len(shown) > 6 else 0)
        right.set(ylim=(0, 1), ylabel="share of runs", title=wrap(f"{key[0]}: collective (consensus names)", 45))
        right.legend(fontsize=7)
    context.add_figure("fig2b_individual_vs_collective", "Individual against collective bias", figure,
                       ["backend", "measure", "name", "share", "ci_low", "ci_high", "samples_or_runs", "significance"],
                       rows, "Left: first-choice probabilities with 95% Wilson intervals; the mark is the bias test's "
                             "(*** p < 0.001, ** p < 0.01, * p < 0.05, n.s. not significant). Right: share of runs reaching "
                             "consensus on each name, one bar per experiment and grid cell.")


@register_section("unbiased_pool", "Random-string pools (Fig. S11, S12 set-up)", order=45,
                  applies=lambda context: "unbiased_pool" in context.artifacts)
def unbiased_pool(context: ReportContext) -> None:
    rows = []
    for _, document in context.artifacts["unbiased_pool"]:
        for attempt, entry in enumerate(document.get("tries", []), start=1):
            rows.append([document.get("backend", ""), attempt, " ".join(entry["pool"]), " ".join(map(str, entry["counts"])),
                         entry["js_distance"], document.get("threshold"), "kept" if entry["kept"] else ""])
    context.add_table("table_unbiased_pools", "Random-string pools tried", ["backend", "try", "pool", "first_choice_counts",
                      "js_distance_base2", "threshold", "kept"], rows,
                      "Pools of six letters and digits kept when their first choices lie within the threshold of uniform.")


# --- Fig. S7 ----------------------------------------------------------------------------------------
def _stability(context: ReportContext) -> list[RecordedExperiment]:
    return [experiment for experiment in context.experiments
            if experiment.params.get("majority_name") and not experiment.params.get("committed")
            and not experiment.params.get("committed_fraction") and experiment.round_stats]


@register_section("stability", "Stability of an established convention (Fig. S7)", order=48,
                  applies=lambda context: bool(_stability(context)))
def stability(context: ReportContext) -> None:
    figure, axes = context.figure()
    axis = axes[0][0]
    rows = []
    for index, experiment in enumerate(_stability(context)):
        colour = COLOURS[index % len(COLOURS)]
        name = experiment.params["majority_name"]
        shares = []
        for run_stats in experiment.round_stats.values():
            shares.append([(entry.get("productions") or {}).get(name, 0) / max(1, sum((entry.get("productions") or {}).values()))
                           for entry in run_stats])
        width = max(len(row) for row in shares)
        matrix = np.full((len(shares), width), np.nan)
        for row_index, row in enumerate(shares):
            matrix[row_index, : len(row)] = row
        rounds = np.arange(1, width + 1)
        for run_shares in matrix:
            axis.plot(rounds, run_shares, color=colour, linewidth=0.6, alpha=0.35)
        mean, sem, _counts = mean_and_sem(matrix)
        axis.fill_between(rounds, mean - sem, mean + sem, color=colour, alpha=0.25, linewidth=0)
        axis.plot(rounds, mean, color=colour, linewidth=2.2, label=f"starts on {name}: {_label(experiment)}")
        for position, round_ in enumerate(rounds):
            rows.append([experiment.label, who(experiment), name, int(round_), mean[position], sem[position], matrix.shape[0]])
    axis.set(xlabel="population round", ylabel=wrap("production probability of the initial convention", 32), ylim=(0, 1.02),
             title="Initial convention left alone (mean ± SEM over runs)")
    axis.legend(fontsize=7, loc="lower left")
    whole_rounds(axis)
    context.add_figure("figs7_stability", "Production of the initial convention without committed agents", figure,
                       ["experiment", "agents_are", "initial_convention", "round", "mean_share", "sem", "runs"], rows,
                       "Populations start in consensus (every memory holds H successful plays); thin lines: runs.")


# --- Fig. 3, Table S3 ------------------------------------------------------------------------------
def _critical_masses(context: ReportContext) -> list[dict[str, Any]]:
    """Every search's results, each with the directory its runs lie under (`root`)."""
    found = []
    for path, document in context.artifacts.get(CRITICAL_MASS, []):
        for result in document.get("results", []):
            found.append(result | {"backend": document.get("backend", ""), "root": path.parent.parent})
    return found


def _critical_for(masses: list[dict[str, Any]], majority: str, alternative: str,
                  experiments: list[RecordedExperiment]) -> int | None:
    """The critical mass a search found for the runs of this panel (those under its directory)."""
    for result in masses:
        if (result["majority"], result["alternative"]) == (majority, alternative) and any(
                experiment.directory.is_relative_to(result["root"]) for experiment in experiments):
            return result["critical_mass"]
    return None


@register_section("critical_mass", "Committed minorities and critical mass (Fig. 3, Table S3)", order=50,
                  applies=lambda context: bool(committed_experiments(context.experiments)) or CRITICAL_MASS in context.artifacts)
def critical_mass(context: ReportContext) -> None:
    grouped = committed_experiments(context.experiments)
    masses = _critical_masses(context)
    if grouped:
        panels_order = sorted(grouped)
        figure, panels = context.panels(len(panels_order), width=6.8, height=3.8, max_columns=2)
        rows = []
        for axis, panel in zip(panels, panels_order):
            sizes = sorted(grouped[panel])
            members = [experiment for size in sizes for experiment in grouped[panel][size]]
            critical = _critical_for(masses, panel.majority, panel.alternative, members)
            colours = matplotlib_colours(len(sizes))
            for colour, size in zip(colours, sizes):
                experiments = grouped[panel][size]
                matrix = _stack([alternative_share_matrix(experiment) for experiment in experiments])
                if not matrix.size:
                    continue
                mean, sem, counts = mean_and_sem(matrix)
                played = np.nansum(_stack([_played(experiment, "alternative_share") for experiment in experiments]), axis=0)
                rounds = np.arange(1, mean.size + 1)
                flipped = [bool(summary.get("flip")) for experiment in experiments for summary in experiment.summaries()]
                bold = critical is not None and size == critical
                axis.fill_between(rounds, mean - sem, mean + sem, color=colour, alpha=0.2, linewidth=0)
                axis.plot(rounds, mean, color=colour, linewidth=2.6 if bold else 1.2, alpha=1.0 if bold or critical is None else 0.7,
                          marker="o" if flipped and all(flipped) else None, markersize=2.5,
                          label=f"CM={size}: {sum(flipped)}/{len(flipped)} flipped" + (" (critical)" if bold else ""))
                for position, round_ in enumerate(rounds):
                    rows.append([panel.who, panel.condition, panel.majority, panel.alternative, size, int(round_),
                                 mean[position], sem[position], int(counts[position]), int(played[position]),
                                 int(counts[position] - played[position]), sum(flipped), int(bold),
                                 " ".join(experiment.label for experiment in experiments)])
            threshold = float(members[0].params.get("consensus_threshold") or FLIP_SHARE)
            axis.axhline(threshold, color="black", linestyle="--", linewidth=1, label=f"flip: {threshold:.0%}")
            axis.set(xlabel="population round", ylabel=f"P({panel.alternative}) among others", ylim=(0, 1.02),
                     title=wrap(panel.title, 58))
            axis.legend(fontsize=7, ncol=2, loc="best")  # where it hides the fewest curves
            whole_rounds(axis)
        context.add_figure("fig3a_alternative_production", "Production of the alternative by committed size", figure,
                           ["group", "condition", "majority", "alternative", "committed", "round", "mean_alternative_share",
                            "sem", "runs", "runs_played", "runs_carried_forward", "runs_flipped", "is_critical_mass",
                            "experiments"], rows,
                           "Mean share of the committed minority's name among the other agents' productions (band: ± one "
                           "standard error over runs); dashed: the flip criterion (95% over the last 3N interactions unless the "
                           "scenario sets consensus_threshold); bold: "
                           "the critical mass; dots: every run flipped. One panel per backend, convention and condition. "
                           "A run that stopped before a round (it flipped, or was stopped) enters that round's mean with its "
                           "last share, carried forward: of a round's `runs`, `runs_played` played it and "
                           "`runs_carried_forward` are carried (in the CSV).")
    if masses:
        results = masses
        figure, axes = context.figure(width=6.4, height=3.6)
        axis = axes[0][0]
        several = len({result["backend"] for result in results}) > 1
        labels = [(f"{result['backend']}:\n" if several else "") + f"against {result['majority']}" for result in results]
        every_run = [result["fraction"] if result["fraction"] is not None else np.nan for result in results]
        paper = [_paper_mass(result) for result in results]
        paper_fractions = [np.nan if mass is None else mass / result["agents"] for mass, result in zip(paper, results)]
        positions = np.arange(len(results))
        width = 0.38
        axis.bar(positions - width / 2, every_run, width, color=COLOURS[0], label="agentsim's rule: every run flips")
        axis.bar(positions + width / 2, paper_fractions, width, color=COLOURS[1],
                 label="paper's criterion: the runs' mean curve flips")
        for position, result in enumerate(results):
            for offset, mass, value in ((-width / 2, result["critical_mass"], every_run[position]),
                                        (width / 2, paper[position], paper_fractions[position])):
                text = "none" if mass is None else f"{mass}/{result['agents']}"
                axis.text(position + offset, (value if value == value else 0) + 0.02, text, ha="center", fontsize=7)
        axis.set_xticks(positions, labels)
        axis.set(ylabel="critical mass (fraction of N)", ylim=(0, 1.1), title="Critical mass to overturn each convention")
        axis.legend(fontsize=7, loc="upper left")
        rows = [[result["backend"], result["majority"], result["alternative"], result["agents"], result["critical_mass"],
                 result["fraction"], mass, None if mass is None else mass / result["agents"], result["runs"],
                 result["required_share"], result["max_rounds"]] for result, mass in zip(results, paper)]
        columns = ["backend", "majority", "alternative", "agents", "critical_mass", "fraction",
                   "critical_mass_paper_criterion", "fraction_paper_criterion", "runs", "required_share", "max_rounds"]
        caption = ("Smallest committed minority flipping the convention within max_rounds population rounds, by two "
                   "criteria: agentsim's (`critical_mass`: at least required_share of the runs flip, each on its own: "
                   "the alternative reaches 95% of the other agents' plays over the last 3N interactions) and the "
                   "paper's (`critical_mass_paper_criterion`, its plotter's: the runs' curves, binned by N "
                   "interactions, averaged, a flipped run carried at 1, and the mean's last three bins reach 95% "
                   "within max_rounds / 2 of the paper's rounds; over the sizes tried). Table S3 is the paper's "
                   "criterion.")
        context.add_figure("fig3b_critical_mass", "Critical mass for each convention", figure, columns, rows, caption)
        context.add_table("table_s3_critical_mass", "Critical mass (Table S3): agentsim's rule and the paper's criterion",
                          columns, rows, caption)


def _paper_mass(result: dict[str, Any]) -> int | None:
    """The critical mass by the paper's criterion a search or an import recorded (from its
    sizes' verdicts where the result predates the figure)."""
    if result.get("paper_criterion_critical_mass") is not None:
        return int(result["paper_criterion_critical_mass"])
    verdicts = {int(size): tried["paper_criterion_flips"] for size, tried in (result.get("tried") or {}).items()
                if isinstance(tried, dict) and tried.get("paper_criterion_flips") is not None}
    return smallest_from_which(verdicts) if verdicts else None


FLIP_SHARE = 0.95


def _played(experiment: RecordedExperiment, key: str) -> np.ndarray:
    """Runs x rounds, as `round_matrix(key)`: 1 where the run played the round and recorded
    `key`, 0 where its value is missing or only carried forward from an earlier round."""
    rows = [[entry.get(key) is not None for entry in entries] for entries in experiment.round_stats.values()]
    if not rows:
        return np.zeros((0, 0))
    matrix = np.zeros((len(rows), max(len(row) for row in rows)))
    for index, row in enumerate(rows):
        matrix[index, : len(row)] = row
    return matrix


def _stack(matrices: list[np.ndarray]) -> np.ndarray:
    """Runs x rounds matrices of several experiments as one (shorter ones padded with NaN)."""
    filled = [matrix for matrix in matrices if matrix.size]
    if not filled:
        return np.zeros((0, 0))
    width = max(matrix.shape[1] for matrix in filled)
    return np.vstack([np.pad(matrix, ((0, 0), (0, width - matrix.shape[1])), constant_values=np.nan) for matrix in filled])


def matplotlib_colours(count: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(value) for value in np.linspace(0.05, 0.9, max(count, 1))]


# --- Table 1, Fig. S8-S10 ----------------------------------------------------------------------------
def _table(context: ReportContext) -> StrategyTable | None:
    if "strategy_table" not in context.memo:
        context.memo["strategy_table"] = strategy_table(context.experiments)
    table: StrategyTable | None = context.memo["strategy_table"]
    return table


def _sequences(names: tuple[str, ...], length: int) -> list[tuple[str, ...]]:
    import itertools

    return list(itertools.product(names, repeat=length))


@register_section("strategies", "Strategies by memory configuration (Table 1, Fig. S8-S10)", order=60,
                  applies=lambda context: any(e.scenario_name == StrategyProbe.name for e in context.experiments)
                  and _table(context) is not None)
def strategies(context: ReportContext) -> None:
    table = _table(context)
    assert table is not None
    names = table.names
    focus = names[-1]
    groups = {pool_key(experiment) for experiment in context.experiments if experiment.scenario_name == StrategyProbe.name}
    context.note(f"Strategies of {table.backend} on the pool {', '.join(names)}."
                 + (f" {len(groups) - 1} other probe group(s) here are not shown; report their directories separately."
                    if len(groups) > 1 else ""))
    rows = table.rows(focus)
    early = [row for row in rows if row["interaction"] <= 3]
    if early:
        context.add_table("table1_strategies", f"P({focus}) for each memory configuration, interactions 1-3 (Table 1)",
                          list(early[0]), [list(row.values()) for row in early],
                          "Memory: own,partner per past interaction, oldest first. p: exact where the backend or the stand-in "
                          "gives probabilities, else sampled; CI: exact (Clopper-Pearson) 95% interval of the sampled share.")
        tests = [test for length in sorted({len(state) for state in table.states}) if length <= 2
                 for test in [table.interaction_bias(focus, length)] if test]
        if tests:
            context.add_table("table1_interaction_bias", "Interaction-level bias (Table 1 caption)", [*tests[0], "significance"],
                              [[*test.values(), significance(test["p_value"])] for test in tests],
                              "All configurations of an interaction pooled (equally weighted); exact binomial test against 1/2 "
                              "(*** p < 0.001, ** p < 0.01, * p < 0.05, n.s. not significant).")
    lengths = sorted({len(state) for state in table.states if state})
    if not lengths:
        return
    side = min(len(table.names) ** max(lengths), 16)  # tiles along the largest grid's side
    figure, axes = context.panels(len(lengths), width=max(4.6, 0.5 * side + 2.2), height=max(4.2, 0.45 * side + 2.0),
                                  max_columns=2)
    heat_rows = []
    image = None
    for axis, length in zip(axes, lengths):
        grid, own_sequences, partner_sequences = _grid(table, focus, length)
        image = axis.imshow(grid, vmin=0, vmax=1, cmap="coolwarm", origin="upper", aspect="equal")
        _ticks(axis, own_sequences, partner_sequences)
        if grid.shape[0] <= 16 and grid.shape[1] <= 16:
            size = 10 if grid.shape[1] <= 4 else 8 if grid.shape[1] <= 8 else 6
            for row_index in range(grid.shape[0]):
                for column_index in range(grid.shape[1]):
                    value = grid[row_index, column_index]
                    text = "–" if np.isnan(value) else f"{value:.2f}"
                    dark = not np.isnan(value) and abs(value - 0.5) > 0.3
                    axis.text(column_index, row_index, text, ha="center", va="center", fontsize=size,
                              color="white" if dark else "black")
        axis.set(title=f"H={length}: P({focus}) by memory", xlabel="partner's names (oldest first)",
                 ylabel="own names (oldest first)")
        for row_index, own in enumerate(own_sequences):
            for column_index, partner in enumerate(partner_sequences):
                heat_rows.append([length, "".join(own), "".join(partner), grid[row_index, column_index]])
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.8, label=f"P({focus})")
    context.add_figure("figs8_strategy_heatmaps", "Strategy across memory states (Fig. S8)", figure,
                       ["memory_length", "own_sequence", "partner_sequence", f"p_{focus}"], heat_rows,
                       f"Each tile: a memory state (own names down, partner's names across) and P({focus}) written in "
                       "it (–: state not probed); grids over 16 × 16 carry colour only, their values are in the CSV.")
    _weighted(context, table, focus, lengths[-1])


def _grid(table: StrategyTable, focus: str, length: int) -> tuple[np.ndarray, list[tuple[str, ...]], list[tuple[str, ...]]]:
    own_sequences = _sequences(table.names, length)
    partner_sequences = _sequences(table.names, length)
    grid = np.full((len(own_sequences), len(partner_sequences)), np.nan)
    for row_index, own in enumerate(own_sequences):
        for column_index, partner in enumerate(partner_sequences):
            strategy = table.states.get(tuple(zip(own, partner)))
            if strategy is not None:
                grid[row_index, column_index] = strategy.probability(focus)
    return grid, own_sequences, partner_sequences


def _ticks(axis: Any, own_sequences: list[tuple[str, ...]], partner_sequences: list[tuple[str, ...]]) -> None:
    if len(own_sequences) <= 32:
        size = 10 if len(own_sequences) <= 8 else 8 if len(own_sequences) <= 16 else 6
        axis.set_yticks(range(len(own_sequences)), ["".join(sequence) for sequence in own_sequences], fontsize=size)
        axis.set_xticks(range(len(partner_sequences)), ["".join(sequence) for sequence in partner_sequences], fontsize=size,
                        rotation=90 if len(partner_sequences) > 8 else 0)
    else:
        axis.set_xticks([])
        axis.set_yticks([])


def _weighted(context: ReportContext, table: StrategyTable, focus: str, length: int) -> None:
    """Fig. S9 / S10: the same grid, circles sized by how often real runs visited each state."""
    real = [experiment for experiment in context.experiments
            if experiment.scenario_name not in (StrategyProbe.name, "individual_bias") and not has_own_section(experiment)
            and tuple(sorted(experiment.names)) == tuple(sorted(table.names))]
    frequencies: Counter[State] = Counter()
    contributing = 0
    for experiment in real:
        found = state_frequencies([experiment], length=length)
        if found:
            frequencies.update(found)
            contributing += len(experiment.runs)
    if not frequencies:
        return
    grid, own_sequences, partner_sequences = _grid(table, focus, length)
    total = sum(frequencies.values())
    xs, ys, sizes, colours, rows = [], [], [], [], []
    for row_index, own in enumerate(own_sequences):
        for column_index, partner in enumerate(partner_sequences):
            state = tuple(zip(own, partner))
            count = frequencies.get(state, 0)
            if count:
                xs.append(column_index)
                ys.append(row_index)
                sizes.append(20 + 600 * count / max(frequencies.values()))
                colours.append(grid[row_index, column_index])
                rows.append([length, state_label(state), count, count / total, grid[row_index, column_index]])
    figure, axes = context.figure(width=5.4, height=4.6)
    axis = axes[0][0]
    scatter = axis.scatter(xs, ys, s=sizes, c=colours, cmap="coolwarm", vmin=0, vmax=1, edgecolors="black", linewidths=0.3)
    axis.set(xlim=(-0.5, len(partner_sequences) - 0.5), ylim=(len(own_sequences) - 0.5, -0.5),
             title=f"States visited in {contributing} real runs (memory of {length})",
             xlabel="partner's names (oldest first)", ylabel="own names (oldest first)")
    _ticks(axis, own_sequences, partner_sequences)
    figure.colorbar(scatter, ax=axis, shrink=0.8, label=f"P({focus})")
    context.add_figure("figs9_weighted_strategies", "Strategies weighted by how often runs visit each state (Fig. S9, S10)",
                       figure, ["memory_length", "memory", "visits", "share_of_visits", f"p_{focus}"], rows,
                       "Circle size: how often an agent decided from the state in real runs; colour: the strategy.")


# --- Fig. S1 ---------------------------------------------------------------------------------------
@register_section("comprehension", "Prompt comprehension (Fig. S1, Table S7)", order=70,
                  applies=lambda context: COMPREHENSION in context.artifacts)
def comprehension(context: ReportContext) -> None:
    rows = []
    for path, document in context.artifacts[COMPREHENSION]:
        for entry in document.get("accuracy", []):
            rows.append([document.get("backend", ""), str(path.parent.parent.name), entry["question"], entry["group"],
                         entry["correct"], entry["asked"], entry["accuracy"], entry["ci_low"], entry["ci_high"]])
    figure, axes = context.figure(width=7, height=3.6)
    axis = axes[0][0]
    groups = sorted({(row[0], row[1]) for row in rows})
    width = 0.8 / max(1, len(groups))
    questions = list(dict.fromkeys(row[2] for row in rows))
    for index, group in enumerate(groups):
        chosen = {row[2]: row for row in rows if (row[0], row[1]) == group}
        positions = np.arange(len(questions)) + index * width
        values = [chosen[question][6] if question in chosen else np.nan for question in questions]
        low = [chosen[question][6] - chosen[question][7] if question in chosen else 0 for question in questions]
        high = [chosen[question][8] - chosen[question][6] if question in chosen else 0 for question in questions]
        axis.bar(positions, values, width=width, yerr=[low, high], capsize=2, color=COLOURS[index % len(COLOURS)],
                 label=f"{group[0]} ({group[1]})")
    axis.set_xticks(np.arange(len(questions)) + 0.4 - width / 2, questions, rotation=30, ha="right", fontsize=8)
    axis.set(ylim=(0, 1.05), ylabel="accuracy", title="Comprehension questions at recorded states")
    axis.axhline(0.8, color="grey", linestyle=":", linewidth=1)
    axis.legend(fontsize=7)
    context.add_figure("figs1_comprehension", "Accuracy on the comprehension questions", figure,
                       ["backend", "experiment", "question", "group", "correct", "asked", "accuracy", "ci_low", "ci_high"],
                       rows, "Table S7's questions asked at each decision of agents of a recorded run; bars: 95% Wilson intervals.")
