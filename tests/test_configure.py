"""One way to build an experiment (issue 43, item 4): the command line, the Python API,
`estimate`, Mesa's `PopulationModel` (and so `mesa.batch_run`) and the Ray driver build the
same configuration from the same input, through `agentsim.configure.configure` (Mesa: its
scenario step, `scenario_files.scenario_from`), and refuse the same bad input with the same one
line (exit 2 on the command line). `--add-runs` and the resume options reach the Python API."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mesa
import pytest
from helpers import ROOT, cli_in_process

import agentsim
from agentsim import api, cli, configure, estimate
from agentsim.configure import ExperimentOptions
from agentsim.distributed.driver import run_plan
from agentsim.errors import ArgumentError, UserError
from agentsim.llm.specs import BackendOptions
from agentsim.model import PopulationModel
from agentsim.progress import NoView
from agentsim.runner import Experiment
from agentsim.session import ExperimentConfig

NAMING = str(ROOT / "scenarios" / "naming_game.py")
STOPPED = "stopped once configured (this test's)"


class _Configured(UserError):
    """Raised by the recording `configure`: every front door ends there, before anything runs."""


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ExperimentConfig]]:
    """Each front door's `configure` (the one function, as it imported it), recording what it
    built and stopping there."""
    built: list[ExperimentConfig] = []
    real = configure.configure

    def recording(options: ExperimentOptions) -> ExperimentConfig:
        built.append(real(options))
        raise _Configured(STOPPED)

    for door in (cli, api, estimate):
        assert door.configure is real  # each front door calls the one builder
        monkeypatch.setattr(door, "configure", recording)
    yield built


def _seen(config: ExperimentConfig) -> dict[str, Any]:
    """A configuration's fields, its scenario as (class, parameters, stand-in settings)."""
    values = {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}
    scenario = values.pop("scenario")
    return {**values, "scenario": (type(scenario), scenario.params, scenario.standin)}


def _scenario(scenario: Any) -> tuple[Any, ...]:
    return type(scenario), scenario.params, scenario.standin


def test_every_front_door_builds_the_same_configuration(configured: list[ExperimentConfig], tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    population = "stand-in:a=3,stand-in:b=3"
    flags = [NAMING, "--population", population, "--set", "agents=6", "--set", "max_rounds=3", "--set",
             "standin.noise=0.1", "--runs", "2", "--seed", "5", "--out", out, "--timeout", "30"]
    assert cli_in_process(*flags, "--no-live").stderr.strip() == f"agentsim: error: {STOPPED}"
    with pytest.raises(_Configured):  # typed values and text alike
        agentsim.api.prepare(NAMING, population=population, overrides={"agents": 6, "max_rounds": "3", "standin.noise": 0.1},
                             runs=2, seed=5, out=out, options=BackendOptions(timeout_s=30))
    estimated = cli_in_process("estimate", *flags)
    assert estimated.returncode == 2 and estimated.stderr.strip() == f"agentsim estimate: error: {STOPPED}"
    from_cli, from_api, from_estimate = map(_seen, configured)
    assert from_cli == from_api == from_estimate
    assert from_cli["runs"] == 2 and from_cli["seed"] == 5 and from_cli["population"] == population
    assert from_cli["scenario"][1].agents == 6 and from_cli["llm"].timeout_s == 30

    # Mesa: the model's scenario is the one the experiment's first run plays (what it draws once
    # per experiment, its name pool, drawn from the seed), from the same file and changes.
    played = _scenario(configured[0].scenario.for_experiment(5))
    model = PopulationModel(NAMING, **{"agents": 6, "max_rounds": "3", "standin.noise": 0.1}, seed=5)
    assert _scenario(model.scenario) == played and model.seed == from_cli["seed"]
    seen: list[tuple[Any, ...]] = []

    class Recording(PopulationModel[Any]):
        def __init__(self, *arguments: Any, **keywords: Any) -> None:
            super().__init__(*arguments, **keywords)
            seen.append(_scenario(self.scenario))

    mesa.batch_run(Recording, parameters={"scenario": NAMING, "agents": 6, "max_rounds": 3, "standin.noise": 0.1,
                                          "seed": 5}, iterations=1, max_steps=1, number_processes=1,
                   display_progress=False)
    assert seen == [played]


def test_the_ray_driver_sends_its_workers_the_configuration_the_builder_made(configured: list[ExperimentConfig],
                                                                            tmp_path: Path) -> None:
    """What each Ray worker is sent (`driver.run_plan`) is the configuration the command line
    and the Python API build, the response cache named so that the workers share its file."""
    pytest.importorskip("ray")
    out = str(tmp_path / "out")
    assert cli_in_process(NAMING, "--executor", "ray", "--cpus-per-run", "0.5", "--runs", "2", "--set", "agents=6",
                          "--out", out, "--no-live").returncode == 2
    with pytest.raises(_Configured):
        agentsim.api.prepare(NAMING, executor="ray", cpus_per_run=0.5, runs=2, overrides={"agents": 6}, out=out)
    from_cli, from_api = configured
    assert _seen(from_cli) == _seen(from_api)
    experiment = Experiment(from_api, NoView())
    experiment.open()
    try:
        plan = run_plan(experiment.session)
    finally:
        experiment.store.close()
        experiment.lock.release()
    assert plan.config.llm.cache_path is not None
    sent = dataclasses.replace(plan.config, llm=dataclasses.replace(plan.config.llm, cache_path=None))
    assert _seen(sent) == _seen(from_cli)
    assert plan.config.executor == "ray" and plan.config.cpus_per_run == 0.5 and plan.config.replicates == 2


# What each door is given for the same mistake: the command line's flags, the API's keywords,
# Mesa's model parameters (where a model takes them), and whether `estimate` takes the flags.
REFUSALS: list[tuple[str, list[str], dict[str, Any], dict[str, Any] | None, bool]] = [
    ("an unknown parameter", ["--set", "agnets=6"], {"overrides": {"agnets": 6}}, {"agnets": 6}, True),
    ("an impossible value", ["--set", "memory_length=-1"], {"overrides": {"memory_length": -1}}, {"memory_length": -1},
     True),
    ("a stand-in setting out of range", ["--set", "standin.noise=2"], {"overrides": {"standin.noise": 2.0}},
     {"standin.noise": 2.0}, True),
    ("no runs", ["--runs", "0"], {"runs": 0}, None, True),
    ("a seed out of range", ["--seed", "-1"], {"seed": -1}, None, True),
    ("two choices of the models", ["--backend", "stand-in", "--population", "stand-in:a=8"],
     {"backend": "stand-in", "population": "stand-in:a=8"}, None, True),
    ("an empty backend", ["--backend", " "], {"backend": " "}, None, True),
    ("runs added to nothing recorded", ["--add-runs", "2"], {"add_runs": 2}, None, False),
    ("Ray's options without Ray", ["--cpus-per-run", "0.5"], {"cpus_per_run": 0.5}, None, False),
    ("Ray given no CPU", ["--executor", "ray", "--cpus-per-run", "0"], {"executor": "ray", "cpus_per_run": 0.0}, None,
     False),
    ("checkpoints a day apart", ["--checkpoint-seconds", "86401"], {"checkpoint_seconds": 86401.0}, None, False),
]


def _refused(call: Callable[[], Any]) -> str:
    with pytest.raises(UserError) as raised:
        call()
    return str(raised.value)


@pytest.mark.parametrize(("flags", "keywords", "parameters", "estimated"), [case[1:] for case in REFUSALS],
                         ids=[case[0] for case in REFUSALS])
def test_the_same_mistake_is_the_same_line_at_every_front_door(tmp_path: Path, flags: list[str], keywords: dict[str, Any],
                                                              parameters: dict[str, Any] | None, estimated: bool) -> None:
    if "ray" in flags:
        pytest.importorskip("ray")
    out = tmp_path / "out"
    refused = cli_in_process(NAMING, "--out", str(out), "--no-live", *flags)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    line = refused.stderr.strip().removeprefix("agentsim: error: ")
    assert _refused(lambda: agentsim.run(NAMING, out=out, **keywords)) == line
    if estimated:
        by_estimate = cli_in_process("estimate", NAMING, *flags)
        assert by_estimate.returncode == 2 and by_estimate.stderr.strip() == f"agentsim estimate: error: {line}"
    if parameters is not None:
        assert _refused(lambda: PopulationModel(NAMING, seed=0, **parameters)) == line
        assert _refused(lambda: mesa.batch_run(PopulationModel, parameters={"scenario": NAMING, "seed": 0, **parameters},
                                               iterations=1, max_steps=1, display_progress=False)) == line
    assert not out.exists()


def test_a_scenario_of_the_wrong_kind_is_one_refusal_for_the_api_and_mesa(tmp_path: Path) -> None:
    line = _refused(lambda: agentsim.run(3.5, out=tmp_path / "out"))  # type: ignore[arg-type]
    assert line.startswith("scenario takes a scenario file's path")
    assert _refused(lambda: PopulationModel(3.5)) == line  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="add_runs= takes a whole number"):
        agentsim.run(NAMING, add_runs="2", out=tmp_path / "out")  # type: ignore[arg-type]


def test_the_python_api_resumes_and_adds_runs_as_the_command_line_does(tmp_path: Path) -> None:
    """`agentsim.run(resume=True, add_runs=K)`, with or without the scenario (then the one
    recorded), as `--resume --add-runs K`; estimate refuses a resume (it plays the whole
    experiment afresh)."""
    out = tmp_path / "out"
    first = agentsim.run(NAMING, runs=1, seed=3, out=out, overrides={"agents": 6, "max_rounds": 2})
    assert list(first.runs()["seed"]) == [3]
    added = agentsim.run(out=out, resume=True, add_runs=1)
    assert sorted(added.runs()["seed"]) == [3, 4]
    again = cli_in_process("--resume", "--out", str(out), "--add-runs", "1", "--no-live")
    assert again.returncode == 0, again.stderr
    assert sorted(agentsim.open(out).runs()["seed"]) == [3, 4, 5]
    with pytest.raises(UserError, match="records 3 runs and --resume continues exactly those; --runs 2"):
        agentsim.run(NAMING, runs=2, seed=3, out=out, resume=True, overrides={"agents": 6, "max_rounds": 2})
    with pytest.raises(UserError, match="estimate plays the whole experiment afresh"):
        estimate.estimate(ExperimentOptions(out=out, resume=True))


THEORY = str(ROOT / "scenarios" / "theory_minimal_naming.py")


@pytest.mark.parametrize("value", [0.1, 0], ids=["a number", "zero"])
def test_a_stand_in_setting_for_rule_agents_is_one_refusal_as_text_or_as_a_value(tmp_path: Path, value: float) -> None:
    """Rule agents ask no stand-in: `standin.KEY` is refused in the same line whether the
    command line gave it as text or Python gave it as a value (the API, Mesa)."""
    out = tmp_path / "out"
    refused = cli_in_process(THEORY, "--out", str(out), "--no-live", "--set", f"standin.noise={value}")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    line = refused.stderr.strip().removeprefix("agentsim: error: ")
    assert line.endswith("agents follow a rule and ask no stand-in; drop standin.noise")
    assert _refused(lambda: agentsim.run(THEORY, out=out, overrides={"standin.noise": value})) == line
    assert _refused(lambda: api.prepare(THEORY, out=out, overrides={"standin.noise": str(value)})) == line
    assert _refused(lambda: PopulationModel(THEORY, seed=0, **{"standin.noise": value})) == line
    assert not out.exists()


SEARCH = str(ROOT / "scenarios" / "critical_mass_search.py")


@pytest.mark.parametrize("flags", [["--runs", "0"], ["--seed", "-1"], ["--backend", " "], ["--set", "standin.noise=2"]],
                         ids=["no runs", "a seed out of range", "an empty backend", "a stand-in setting out of range"])
def test_critical_mass_refuses_what_a_run_refuses_in_the_same_line(tmp_path: Path, flags: list[str]) -> None:
    refused = cli_in_process(SEARCH, "--out", str(tmp_path / "run"), "--no-live", *flags)
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip().removeprefix("agentsim: error: ")
    searched = cli_in_process("critical-mass", SEARCH, "--out", str(tmp_path / "search"), *flags)
    assert searched.returncode == 2 and searched.stderr.strip() == f"agentsim critical-mass: error: {line}"
    assert not (tmp_path / "search").exists()


def test_each_size_of_a_critical_mass_search_is_built_by_the_one_builder(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Every size's experiment comes from `configure`: the file's classes travel to Ray's workers
    (its path, resolved), its RUNS are the runs per size, and `--set` reaches every size."""
    from agentsim.games.naming import critical_mass

    built: list[ExperimentConfig] = []
    real = configure.configure

    def recording(options: ExperimentOptions) -> ExperimentConfig:
        built.append(real(options))
        return built[-1]

    monkeypatch.setattr(critical_mass, "configure", recording)
    searched = cli_in_process("critical-mass", SEARCH, "--out", str(tmp_path / "search"), "--set", "agents=8",
                              "--set", "max_rounds=4", "--max-rounds", "4")
    assert searched.returncode == 0, searched.stderr
    sizes = [config for config in built if config.out.name.startswith("committed_")]
    assert sizes and {config.scenario_file for config in built} == {str(Path(SEARCH).resolve())}
    assert all(config.runs == 10 and config.scenario.params.agents == 8 for config in built)  # the file's RUNS = 10
    assert {config.scenario.params.committed_count() for config in sizes} == {
        int(config.out.name.removeprefix("committed_")) for config in sizes}


def test_text_and_values_given_together_are_one_change(tmp_path: Path) -> None:
    """`--set` text and Python values are applied at once and checked together: a text that
    needs a value beside it (`stop_at="flip"` needs `committed`) is not refused for the order."""
    options = ExperimentOptions(scenario=NAMING, overrides={"stop_at": "flip", "committed": 2}, out=tmp_path / "out")
    params = configure.configure(options).scenario.params
    assert (params.stop_at, params.committed) == ("flip", 2)
    assert PopulationModel(NAMING, seed=0, stop_at="flip", committed=2).scenario.params.committed == 2
