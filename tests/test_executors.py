"""`run_all`, the one loop both executors start, wait for and stop their runs with: the first
failure stops the others (each sees it as the experiment's cause) and is raised as itself, not
as an ExceptionGroup, so the command line names it; an interrupt from outside is recorded as what stopped the experiment."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers import ROOT, Quiet, dump

from agentsim.errors import UserError
from agentsim.executors import run_all
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.progress import NoView, Progress
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.scenario_files import load_scenario
from agentsim.session import Session


def test_the_first_failure_stops_the_others_and_is_raised_as_itself() -> None:
    progress = Progress(NoView())
    started: list[int] = []
    causes: dict[int, BaseException | None] = {}
    failure = ValueError("run 2's backend refused the key")

    async def run_one(replicate: int) -> None:
        started.append(replicate)
        if replicate == 1:
            await asyncio.sleep(0)
            raise failure
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            causes[replicate] = progress.stopped_by  # what a run records as its cause when it stops
            raise

    with pytest.raises(ValueError) as raised:
        asyncio.run(run_all(4, run_one, at_once=2, progress=progress))
    assert raised.value is failure and progress.stopped_by is failure
    # Run 4 waited its turn and never began; run 3's turn came as run 2 failed (the executors
    # then begin nothing): every run stopped records the failure as its cause.
    assert 3 not in started and set(causes) == set(started) - {1}
    assert all(cause is failure for cause in causes.values())


def test_an_interrupt_from_outside_is_what_stopped_the_experiment() -> None:
    progress = Progress(NoView())
    stopped: list[int] = []

    async def run_one(replicate: int) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.append(replicate)
            raise

    async def interrupted() -> None:
        task = asyncio.ensure_future(run_all(3, run_one, at_once=3, progress=progress))
        await asyncio.sleep(0.01)
        task.cancel()  # what asyncio.run does with Ctrl-C
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(interrupted())
    assert sorted(stopped) == [0, 1, 2]
    assert isinstance(progress.stopped_by, asyncio.CancelledError)


def test_a_run_whose_turn_comes_as_the_experiment_stops_does_not_begin(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """One run at a time: run 1's refused key stops the experiment; runs 2 and 3 never begin
    (no row, nothing to resume but what they would have run), as a Ray sweep's do not."""

    class Refusing(StandInModel):
        def answer(self, request: Request) -> Completion:
            raise UserError("the backend refused the key; give another")

        async def complete(self, request: Request) -> Completion:
            return self.answer(request)

    monkeypatch.setattr(Session, "runs_at_once", lambda self: 1)
    scenario = load_scenario(ROOT / "scenarios" / "naming_game.py")[0].with_params(agents=6, max_rounds=3)
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=tmp_path, runs=3), Quiet())
    experiment.open()
    experiment.backends = {"stand-in": Refusing(experiment.scenario.standin_part().rules)}
    with pytest.raises(UserError, match="refused the key"):
        asyncio.run(experiment.run())
    runs = dump(tmp_path / "agentsim.db", tables=("runs",))["runs"]
    assert [(row[0], row[4]) for row in runs] == [(1, "failed")]
