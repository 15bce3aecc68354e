"""Critical mass search (Flint Ashery et al. 2025, Fig. 3, Table S3).

For a population in consensus on `majority` (every memory holds H successful plays of it), the
critical mass is the smallest committed minority, always saying `alternative`, that flips the
convention (the alternative reaches 95% of the other agents' productions over the last 3N
interactions) within `max_rounds` population rounds in at least `required_share` of `runs`:
agentsim's rule, every run by default. Beside it each size tried is judged by the paper's own
criterion too (`paper_flips`: the mean of the runs' curves flips, not every run), and the
search's result carries the critical mass that criterion gives over the sizes tried.

Flipping is taken to be monotone in the minority's size, so the search is a bisection over
sizes 1..N-1; with `parallel` P > 1 it tries P sizes at once, evenly spread over what is left
(a (P+1)-ary search: fewer steps, each as long as one size), on the in-process executor or
on Ray (`executor="ray"`), where the sizes' runs spread over the cluster. Each size tried is an ordinary experiment in its own sub-directory
(`<majority>_to_<alternative>/committed_NNN`): a search run again, or widened to more runs,
reuses every finished run and only runs what is missing. `search_both` measures both
conventions of a pair: a stronger convention needs a larger minority to be overturned.

A search takes minutes on a hosted model, so it reports as it goes: `progress` gets one line
per step (the sizes about to be tried) and one per size tried (its flips and where the
critical mass now lies); `view` makes the live view each size's runs are shown in.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ... import event_loop
from ...analysis.recorded import RecordedExperiment, save_artifact
from ...configure import ExperimentOptions, configure
from ...llm.providers import STAND_IN
from ...llm.specs import BackendOptions
from ...params import require
from ...runner import Experiment, ExperimentConfig, View
from ...scenario_files import ScenarioSource
from ...session import LOCAL
from ...store import Store
from . import NamingGame
from .bias import backend_label

ARTIFACT = "critical_mass"
PAPER_ROUND = 2  # agentsim rounds in one of the paper's population rounds (N interactions)
PAPER_FLIP = 2.849  # the plotter's test: the last three bins of a curve sum to at least this (a mean of 95%)

Progress = Callable[[str], None]  # one line at a time, as the search goes
ViewFactory = Callable[[], View]  # a fresh view for each size's experiment


@dataclass(frozen=True, kw_only=True)
class CriticalMassSearch:
    """What to search: the scenario (N, H, names, the stand-in's rule...), as every front door
    takes it (a naming-game scenario, or the file that makes one, with `overrides` as `--set`
    gives them), how its runs are played, and the criterion. Each size tried is an experiment
    the one builder makes (`agentsim.configure`): the same checks, in the same words, as
    `python -m agentsim FILE`, and a file's RUNS, classes (for Ray's workers) and checks."""

    scenario: ScenarioSource
    majority: str
    alternative: str
    overrides: Mapping[str, Any] = field(default_factory=dict)  # `--set`: text as the command line reads it, or values
    runs: int | None = 10  # runs per size; None: the scenario file's RUNS, as a run takes it
    required_share: float = 1.0
    max_rounds: int = 30
    backend: str = STAND_IN
    seed: int = 0
    llm: BackendOptions = field(default_factory=BackendOptions)  # how the backend is reached (cache, --sample-locally)
    parallel: int = 1  # sizes tried at once
    executor: str = LOCAL  # where their runs execute: "local" or "ray" (runner.ExperimentConfig)
    ray_address: str = ""
    cpus_per_run: float = 1.0

    def __post_init__(self) -> None:
        require(1 <= self.parallel <= 64, f"parallel must be between 1 and 64 sizes at once (got {self.parallel})")
        scenario = self.searched.scenario
        require(isinstance(scenario, NamingGame) and len(scenario.params.names) >= 2,
                "the critical-mass search needs a naming-game scenario with a fixed name pool (names=...)")
        names = scenario.params.names
        require(self.majority in names and self.alternative in names and self.majority != self.alternative,
                f"majority and alternative must be two different names of the pool {', '.join(names)}")
        require(0 < self.required_share <= 1, f"required_share must be in (0, 1] (got {self.required_share})")
        require(self.max_rounds >= 1, f"max_rounds must be at least 1 (got {self.max_rounds})")

    @cached_property
    def searched(self) -> ExperimentConfig:
        """The experiment searched over, as the builder makes it (each size's adds its committed
        minority): checked once, before any size runs."""
        return configure(self.options(Path("."), 0, resume=False))  # (the builder touches no directory)

    @property
    def agents(self) -> int:
        return int(self.searched.scenario.params.agents)

    @property
    def runs_each(self) -> int:
        """Runs per size (the file's RUNS where `runs` is None)."""
        return self.searched.runs

    def changes(self, committed: int) -> dict[str, Any]:
        """What a size changes of the scenario: its committed minority, starting from consensus."""
        return {"committed": committed, "committed_fraction": 0.0, "committed_mode": "replace",
                "majority_name": self.majority, "committed_name": self.alternative, "stop_at": "flip",
                "max_rounds": self.max_rounds}

    def options(self, directory: Path, committed: int, *, resume: bool) -> ExperimentOptions:
        """What the size's experiment is given, as a front door gives it (`committed` 0: none
        added, the searched experiment itself)."""
        changes = self.changes(committed) if committed else {}
        return ExperimentOptions(scenario=self.scenario, overrides={**self.overrides, **changes}, out=directory,
                                 backend=self.backend, llm=self.llm, runs=self.runs, seed=self.seed, resume=resume,
                                 checkpoint_seconds=5.0, executor=self.executor, ray_address=self.ray_address,
                                 cpus_per_run=self.cpus_per_run)

    def directory(self, root: Path, committed: int) -> Path:
        return root / f"{self.majority}_to_{self.alternative}" / f"committed_{committed:03d}"


@dataclass
class CriticalMass:
    majority: str
    alternative: str
    agents: int
    runs: int
    required_share: float
    max_rounds: int
    critical_mass: int | None
    tried: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def fraction(self) -> float | None:
        return None if self.critical_mass is None else self.critical_mass / self.agents

    @property
    def paper_critical_mass(self) -> int | None:
        """The critical mass by the paper's criterion (`paper_flips`: the runs' mean curve flips),
        over the sizes tried; None where no size tried says (runs recorded before it was kept)."""
        verdicts = {size: tried["paper_criterion_flips"] for size, tried in self.tried.items()
                    if tried.get("paper_criterion_flips") is not None}
        return smallest_from_which(verdicts) if verdicts else None

    def as_dict(self) -> dict[str, Any]:
        return {"majority": self.majority, "alternative": self.alternative, "agents": self.agents, "runs": self.runs,
                "required_share": self.required_share, "max_rounds": self.max_rounds,
                "critical_mass": self.critical_mass, "fraction": self.fraction,
                "paper_criterion_critical_mass": self.paper_critical_mass,
                "tried": {str(size): value for size, value in sorted(self.tried.items())}}


class _Quiet:
    def start(self, experiment: dict[str, Any]) -> None: ...
    def update(self, runs: list[Any], *, final: bool = False) -> None: ...
    def warn(self, message: str) -> None: ...
    def stop(self) -> None: ...


def flips_at(search: CriticalMassSearch, root: Path, committed: int) -> dict[str, Any]:
    """Run (or reuse) `search.runs_each` runs with `committed` agents; how many flipped in time."""
    return event_loop.run(_flips_at(search, root, committed))


async def _flips_at(search: CriticalMassSearch, root: Path, committed: int,
                    view: ViewFactory | None = None) -> dict[str, Any]:
    directory = search.directory(root, committed)
    config = configure(search.options(directory, committed, resume=Store.exists(directory)))
    experiment = Experiment(config, view() if view is not None else _Quiet())
    experiment.open()
    summaries = await experiment.run()
    flips = sum(1 for summary in summaries if summary.get("flip"))
    rounds = [summary["flip_round"] for summary in summaries if summary.get("flip")]
    window = search.max_rounds // PAPER_ROUND
    recorded = RecordedExperiment(directory)
    try:
        flipped = {row["run"]: bool(row["summary"].get("flip")) for row in recorded.runs}
        # a run stops once it flips, where the paper's ran on: it stays flipped to the window's end
        curves = [curve + [1.0] * (window - len(curve)) if flipped.get(run) else curve
                  for run, entries in recorded.round_stats.items() for curve in [paper_curve_of_rounds(entries)]]
    finally:
        recorded.close()
    return {"runs": len(summaries), "flips": flips, "share": flips / len(summaries) if summaries else 0.0,
            "flip_rounds": rounds, "paper_criterion_flips": paper_flips(curves, window),
            "directory": str(directory.relative_to(root))}


def paper_flips(curves: list[list[float]], bins: int) -> bool:
    """The paper's flip of one committed size (its plotter.ipynb, `non_cm_word_use`): the runs'
    curves (the alternative's share of the non-committed agents' plays per bin of N
    interactions, from the convergence on), runs whose own last three bins flipped extended with
    1s, averaged bin by bin (a run that ended counts no longer), and the mean of the first
    `bins` flips if its last three bins sum to PAPER_FLIP. Not every run need flip: the mean
    decides. Where the runs are shorter than `bins` (Llama-3 at N = 48: 21 bins, 1,000
    interactions) the mean stops at the longest run, which is what the notebook does with its
    own window for them (`max_round = 21`; 30 for the other models): its padding of 30 bins past
    the longest run is then never read."""
    curves = [curve for curve in curves if curve]
    if not curves:
        return False
    longest = max(len(curve) for curve in curves)
    bins = min(bins, longest)  # past the data only the extended runs would be left in the mean
    extended = [curve + [1.0] * (bins - len(curve)) if sum(curve[-3:]) >= PAPER_FLIP else curve for curve in curves]
    mean = [sum(values) / len(values) for values in
            ([curve[index] for curve in extended if index < len(curve)] for index in range(bins))]
    return sum(mean[-3:]) >= PAPER_FLIP


def paper_curve_of_rounds(rounds: list[dict[str, Any]]) -> list[float]:
    """A run's paper curve from its recorded rounds (the store's per-round tallies): the
    alternative's share of the non-committed plays per PAPER_ROUND agentsim rounds, from the
    counts where the rounds have them (else the mean of the rounds' shares)."""
    curve = []
    for start in range(0, len(rounds), PAPER_ROUND):
        chunk = rounds[start:start + PAPER_ROUND]
        plays = [entry.get("uncommitted_productions") for entry in chunk]
        if all(isinstance(count, int) for count in plays):
            total = sum(int(count or 0) for count in plays)
            curve.append(sum(int(entry.get("uncommitted_alternative") or 0) for entry in chunk) / total if total else 0.0)
        else:
            shares = [entry["alternative_share"] for entry in chunk if entry.get("alternative_share") is not None]
            curve.append(sum(shares) / len(shares) if shares else 0.0)
    return curve


def smallest_from_which(flips: dict[int, bool]) -> int | None:
    """The smallest size that flips with every larger size tried flipping too; None if the largest does not."""
    smallest = None
    for size in sorted(flips, reverse=True):
        if not flips[size]:
            break
        smallest = size
    return smallest


def probes(low: int, high: int, parallel: int) -> list[int]:
    """The sizes to try next when the critical mass is in [low, high] and `high` flips:
    `parallel` sizes evenly spread below `high` (the middle one, for one: a bisection)."""
    return sorted({low + (high - low) * step // (parallel + 1) for step in range(1, parallel + 1)})


def search(search: CriticalMassSearch, root: Path | str, *, progress: Progress | None = None,
           view: ViewFactory | None = None) -> CriticalMass:
    """Search for the smallest committed minority that flips the convention."""
    with _executor(search):
        return event_loop.run(_search(search, Path(root), progress or (lambda line: None), view))


async def _search(search: CriticalMassSearch, root: Path, progress: Progress, view: ViewFactory | None) -> CriticalMass:
    result = CriticalMass(search.majority, search.alternative, search.agents, search.runs_each,
                          search.required_share, search.max_rounds, None)
    against = f"against {search.majority} (committed say {search.alternative})"
    low, high = 1, search.agents - 1

    async def try_sizes(sizes: list[int]) -> None:
        new = [size for size in sizes if size not in result.tried]
        if not new:
            return
        progress(f"{against}: trying {', '.join(map(str, new))} committed of {search.agents}, {search.runs_each} runs "
                 f"each (finished runs are reused)")
        one_view = view if len(new) == 1 else None  # (one live view at a time)
        for size, tried in zip(new, await asyncio.gather(*(_flips_at(search, root, size, one_view) for size in new))):
            result.tried[size] = tried

    def enough(size: int) -> bool:
        return bool(result.tried[size]["share"] >= search.required_share)

    def report(sizes: list[int]) -> None:
        for size in sizes:
            tried = result.tried[size]
            where = (f"critical mass {high}" if low >= high else
                     f"critical mass between {low} and {high}" if enough(search.agents - 1) else "no flip up to N-1")
            progress(f"{against}: {size} of {search.agents} committed flipped {tried['flips']}/{tried['runs']} runs "
                     f"within {search.max_rounds} rounds ({'enough' if enough(size) else 'not enough'}); {where}")

    await try_sizes([high])
    report([high])
    if not enough(high):
        return result
    while low < high:
        sizes = probes(low, high, search.parallel)
        await try_sizes(sizes)
        high = min([size for size in sizes if enough(size)] + [high])
        low = max([size + 1 for size in sizes if size < high and not enough(size)] + [low])
        report(sizes)
    result.critical_mass = high
    return result


@contextlib.contextmanager
def _executor(search: CriticalMassSearch) -> Iterator[None]:
    """On Ray, one connection for the whole search (its sizes' experiments share it)."""
    if search.executor != "ray":
        yield
        return
    from ...distributed.driver import connect  # lazy: Ray is an extra, imported only when asked for

    ray, connected_here = connect(search.ray_address)
    try:
        yield
    finally:
        if connected_here:
            ray.shutdown()


def search_both(search_spec: CriticalMassSearch, root: Path | str, *, progress: Progress | None = None,
                view: ViewFactory | None = None) -> list[CriticalMass]:
    """The critical mass against each convention of the pair, saved for the report."""
    root = Path(root)
    reverse = dataclasses.replace(search_spec, majority=search_spec.alternative, alternative=search_spec.majority)
    with _executor(search_spec):
        results = [search(search_spec, root, progress=progress, view=view),
                   search(reverse, root, progress=progress, view=view)]
    save_artifact(root, ARTIFACT, {"backend": search_spec.backend, "results": [result.as_dict() for result in results]})
    return results


COMMITTED_PARAMS = ("committed", "committed_fraction")


@dataclass(frozen=True, order=True)
class CommittedPanel:
    """One panel of Fig. 3A: who the agents are, the convention and its challenger, and the
    condition (N, H and any other parameter a grid cell changes), which its lines share."""

    who: str
    majority: str
    alternative: str
    condition: str

    @property
    def title(self) -> str:
        return f"{self.who}, {self.condition}: consensus on {self.majority}, committed minority says {self.alternative}"


def committed_experiments(experiments: list[RecordedExperiment]) -> dict[CommittedPanel, dict[int, list[RecordedExperiment]]]:
    """Experiments with a committed minority starting from consensus, by panel and committed
    count: the lines of Fig. 3A. Experiments of one panel and count ran the same condition
    (several directories of a search), so their runs are one line."""
    grouped: dict[CommittedPanel, dict[int, list[RecordedExperiment]]] = {}
    for experiment in experiments:
        scenario = experiment.scenario
        if not isinstance(scenario, NamingGame) or not experiment.runs:
            continue
        params = scenario.params
        count = params.committed_count()
        majority = params.majority_name
        if not count or majority is None:
            continue
        if experiment.rule_agents:
            who = f"rule agents ({experiment.scenario_name})"
        else:
            who = backend_label(experiment) if experiment.scenario_name == NamingGame.name else experiment.scenario_name
        varied = [f"{key}={value}" for key, value in experiment.variant_params.items()
                  if key not in COMMITTED_PARAMS + ("agents", "memory_length")]
        condition = ", ".join([f"N={params.agents}", f"H={params.memory_length}", *varied])
        panel = CommittedPanel(who, majority, scenario.committed_name(), condition)
        grouped.setdefault(panel, {}).setdefault(count, []).append(experiment)
    return grouped
