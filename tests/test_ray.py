"""`--executor ray`: a sweep's runs as Ray tasks, recorded by the driver as if run in process.

One local Ray (2 CPUs) serves the whole module; each test's runs are short. The runs must be
the same runs (moves, rounds, summaries, minus timings) as the in-process executor's; they
must have run in Ray's worker processes; a worker killed mid-run must cost nothing; and the
cluster-wide limiter must hold --max-in-flight across workers and across two servers of
one model, as measured at the servers."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, Quiet, _without_timing, cli, dump
from servers import ServerThread, scripted_server, standin_server  # noqa: F401  (the fixtures)
from test_configure import _seen

from agentsim.llm.limiter import Limits
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.scenario_files import load_scenario

ray = pytest.importorskip("ray")

NAMING_GAME = ROOT / "scenarios" / "naming_game.py"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """One Ray for the module: starting one takes seconds."""
    before = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # no token written into the home directory
    ray.init(num_cpus=2, object_store_memory=200 * 2**20, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield ray
    ray.shutdown()
    if before is None:
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = before


def experiment(out: Path, *, executor: str, runs: int, file: Path = NAMING_GAME, overrides: dict[str, Any] | None = None,
               **config: Any) -> Experiment:
    scenario = load_scenario(file)[0].with_params(**(overrides or {}))
    made = Experiment(ExperimentConfig(scenario=scenario, out=out, runs=runs, scenario_file=str(file),
                                       executor=executor, **config), Quiet())
    made.open()
    return made


def summary(out: Path) -> dict[str, Any]:
    document = json.loads((out / "summary.json").read_text())
    document["runs"] = [_without_timing(run) for run in document["runs"]]
    document.pop("code_version")
    return _without_timing(document)


def test_ray_runs_are_the_local_runs_and_ran_in_workers(local_ray: Any, tmp_path: Path) -> None:
    local = experiment(tmp_path / "local", executor="local", runs=6)
    asyncio.run(local.run())
    swept = experiment(tmp_path / "ray", executor="ray", runs=6)
    asyncio.run(swept.run())
    assert dump(tmp_path / "ray" / "agentsim.db") == dump(tmp_path / "local" / "agentsim.db")
    assert summary(tmp_path / "ray") == summary(tmp_path / "local")
    assert sorted(swept.cluster_workers) == [1, 2, 3, 4, 5, 6]
    pids = {pid for workers in swept.cluster_workers.values() for _, pid in workers}
    assert os.getpid() not in pids and pids  # every run ran in a Ray worker, none in this process


def test_a_grid_runs_on_ray_as_in_process(local_ray: Any, tmp_path: Path) -> None:
    """VARIANTS cells: each replicate's variant and seed as in process."""
    variants = ({"memory_length": 3}, {"memory_length": 5})
    local = experiment(tmp_path / "local", executor="local", runs=2, variants=variants, overrides={"max_rounds": 6})
    asyncio.run(local.run())
    swept = experiment(tmp_path / "ray", executor="ray", runs=2, variants=variants, overrides={"max_rounds": 6})
    asyncio.run(swept.run())
    assert dump(tmp_path / "ray" / "agentsim.db") == dump(tmp_path / "local" / "agentsim.db")
    assert [run["variant"] for run in summary(tmp_path / "ray")["runs"]] == [0, 1, 0, 1]


@pytest.mark.timeout(360)  # 15-30 s on two free cores; a worker restarted on a loaded host takes minutes
def test_a_killed_worker_loses_and_repeats_nothing(local_ray: Any, tmp_path: Path, standin_server: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL the worker of run 1 after its first commit (of eight rounds, each at least
    one 50 ms call, so its worker is still at work): the run goes on from that checkpoint on
    another worker, and every run is recorded once, as in process. A cap of 4 for two runs'
    encounters keeps calls of the dead worker waiting in the cluster limiter when it dies."""
    from agentsim.distributed import driver
    from agentsim.distributed.records import Committed

    server = standin_server(capacity=32, service_time_s=0.05)
    backend = f"openai:stand-in@{server.url}/v1"
    options = BackendOptions(limits=Limits(max_in_flight=4), cache=False)
    kills: list[int] = []
    seen: list[tuple[int, str]] = []  # (run, the record's kind)
    apply = driver._Sweep._apply

    def kill_run_one(sweep: Any, message: tuple[Any, ...], run: int) -> None:
        apply(sweep, message, run)
        seen.append((run, type(message).__name__))
        if isinstance(message, Committed) and run == 1 and not kills:
            pid = sweep.progress.workers[1][-1][1]
            kills.append(pid)
            os.kill(pid, signal.SIGKILL)

    monkeypatch.setattr(driver._Sweep, "_apply", kill_run_one)
    swept = experiment(tmp_path / "ray", executor="ray", runs=2, backend=backend, llm=options, checkpoint_seconds=0,
                       overrides={"max_rounds": 8, "stop_at": "none"})
    asyncio.run(swept.run())
    assert (1, "Resumed") in seen  # the second worker began from the first one's checkpoint
    assert kills and len(swept.cluster_workers[1]) == 2  # run 1 lost its worker, and went on on another
    local = experiment(tmp_path / "local", executor="local", runs=2, backend=backend, llm=options,
                       overrides={"max_rounds": 8, "stop_at": "none"})
    asyncio.run(local.run())
    # Every row once, as in process (the run summaries' call counts may differ: the calls in
    # flight when the worker died were sent again, and are counted as sent).
    tables = ("agents", "encounters", "decisions", "rounds")
    assert dump(tmp_path / "ray" / "agentsim.db", tables=tables) == dump(tmp_path / "local" / "agentsim.db", tables=tables)
    runs = dump(tmp_path / "ray" / "agentsim.db", tables=("runs",))["runs"]
    assert [(row[0], row[4]) for row in runs] == [(1, "done"), (2, "done")]


def test_max_in_flight_holds_across_the_cluster_and_two_servers(local_ray: Any, tmp_path: Path) -> None:
    """Two servers of one model (one event loop, one tally of requests in progress): the
    calls in flight at both together never pass --max-in-flight, though two workers send."""
    first = ServerThread(_config(capacity=16, service_time_s=0.01))
    second = _beside(first)
    try:
        second.stats = first.server.stats  # one tally for both: what is in flight at the servers together
        urls = f"{first.url}/v1|{second.url}/v1"
        options = BackendOptions(limits=Limits(max_in_flight=3, adaptive=False), cache=False)
        swept = experiment(tmp_path / "ray", executor="ray", runs=4, backend=f"openai:stand-in@{urls}", llm=options,
                           overrides={"max_rounds": 3, "stop_at": "none"})
        asyncio.run(swept.run())
        stats = first.server.stats
        assert stats.answered > 100
        assert stats.max_active == 3  # reached and never passed, by two workers at once
        workers = {pid for each in swept.cluster_workers.values() for _, pid in each}
        assert len(workers) >= 2  # (Ray may also hand runs to idle workers of earlier tests)
    finally:
        asyncio.run_coroutine_threadsafe(second.stop(), first.loop).result(10)
        first.stop()


def _config(**values: Any) -> Any:
    from standin_server import ServerConfig

    return ServerConfig(**values)


def _beside(thread: ServerThread) -> Any:
    """A second stand-in server in `thread`'s event loop."""
    server = asyncio.run_coroutine_threadsafe(ServerThread._make(_config(capacity=16, service_time_s=0.01)),
                                              thread.loop).result(10)
    server.url = asyncio.run_coroutine_threadsafe(server.start(), thread.loop).result(10)
    return server


def test_the_command_line_runs_on_ray_as_in_process(tmp_path: Path) -> None:
    """The issue's acceptance: --runs 8 --executor ray gives the moves and summary.json of --runs 8."""
    environment = {**os.environ, "AGENTSIM_RAY_CPUS": "2", "RAY_AUTH_MODE": "disabled"}
    short = ("--set", "max_rounds=15")  # eight runs all the same: their length proves nothing more
    swept = cli(str(NAMING_GAME), "--runs", "8", *short, "--executor", "ray", "--out", "ray", "--no-live", timeout=120,
                env=environment)
    assert swept.returncode == 0, swept.stderr[-2000:]
    local = cli(str(NAMING_GAME), "--runs", "8", *short, "--out", "local", "--no-live")
    assert local.returncode == 0, local.stderr[-2000:]
    moves = dump(tmp_path / "ray" / "agentsim.db", tables=("moves",))
    assert moves["moves"] and moves == dump(tmp_path / "local" / "agentsim.db", tables=("moves",))
    assert summary(tmp_path / "ray") == summary(tmp_path / "local")


def test_the_python_api_sweeps_on_ray_with_the_configuration_the_command_line_builds(
        local_ray: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43, item 4: `agentsim.run(executor="ray", ...)` sends every worker the configuration
    that `python -m agentsim FILE ... --executor ray` builds (one builder, agentsim/configure.py)."""
    import agentsim
    from agentsim.cli import build_parser
    from agentsim.configure import configure
    from agentsim.distributed import driver
    from agentsim.flags import experiment_options

    sent: list[Any] = []
    real = driver.run_plan
    monkeypatch.setattr(driver, "run_plan", lambda session: sent.append(real(session)) or sent[-1])
    out = tmp_path / "ray"
    swept = agentsim.run(NAMING_GAME, executor="ray", cpus_per_run=0.5, runs=2, overrides={"agents": 6, "max_rounds": 3},
                         out=out)
    assert list(swept.runs()["run"]) == [1, 2]
    flags = build_parser().parse_args([str(NAMING_GAME), "--executor", "ray", "--cpus-per-run", "0.5", "--runs", "2",
                                       "--set", "agents=6", "--set", "max_rounds=3", "--out", str(out)])
    built = configure(experiment_options(flags))
    (plan,) = sent
    assert plan.config.llm.cache_path is not None  # named by the driver: the workers share the cache file
    config = dataclasses.replace(plan.config, llm=dataclasses.replace(plan.config.llm, cache_path=None))
    assert _seen(config) == _seen(built)


def test_executor_ray_without_ray_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from agentsim.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: `import ray` fails
    assert main([str(NAMING_GAME), "--executor", "ray", "--out", "x"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "pip install 'agentsim[ray]'" in error
    assert not Path("x").exists()


def test_ray_address_without_the_ray_executor_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from agentsim.cli import main

    assert main([str(NAMING_GAME), "--ray-address", "auto", "--out", "x"]) == 2
    assert "--executor ray" in capsys.readouterr().err


def test_a_routed_backend_spreads_requests_over_its_servers(standin_server: Any, tmp_path: Path) -> None:
    """In process too: one spec, two servers, both used, same runs as one server."""
    first, second = standin_server(capacity=8), standin_server(capacity=8)
    options = BackendOptions(cache=False)
    both = experiment(tmp_path / "both", executor="local", runs=2, llm=options,
                      backend=f"openai:stand-in@{first.url}/v1|{second.url}/v1", overrides={"max_rounds": 3})
    asyncio.run(both.run())
    assert first.stats.answered > 20 and second.stats.answered > 20
    one = experiment(tmp_path / "one", executor="local", runs=2, llm=options,
                     backend=f"openai:stand-in@{first.url}/v1", overrides={"max_rounds": 3})
    asyncio.run(one.run())
    assert dump(tmp_path / "both" / "agentsim.db", tables=("moves",)) == dump(tmp_path / "one" / "agentsim.db", tables=("moves",))


def _committed_search(**changes: Any) -> Any:
    from agentsim.games.naming import NamingGame, NamingStandInSettings
    from agentsim.games.naming.critical_mass import CriticalMassSearch

    scenario = NamingGame(agents=12, names=("Q", "M"), memory_length=5,
                          standin=NamingStandInSettings(bias_name="M", bias=0.5, noise=0.1))
    return CriticalMassSearch(scenario=scenario, majority="M", alternative="Q", runs=2, max_rounds=30, seed=0, **changes)


def test_the_critical_mass_search_runs_its_sizes_on_ray(local_ray: Any, tmp_path: Path) -> None:
    from agentsim.games.naming import critical_mass

    bisection = critical_mass.search(_committed_search(), tmp_path / "bisection")
    on_ray = critical_mass.search(_committed_search(parallel=3, executor="ray"), tmp_path / "ray")
    assert on_ray.critical_mass == bisection.critical_mass
    assert ray.is_initialized()  # the module's Ray: the search used it and left it running


def test_one_failed_run_stops_the_sweep_and_every_begun_run_records_why(local_ray: Any, tmp_path: Path,
                                                                        scripted_server: Any) -> None:
    """As in process: a backend that refuses the requests (400) stops every run, each
    recorded as failed with the cause, none left 'running'; the sweep raises the cause."""
    from agentsim.errors import BackendFailedError

    server = scripted_server(mode="status", status=400)
    swept = experiment(tmp_path / "ray", executor="ray", runs=3, backend=f"openai:m@{server.url}/v1",
                       llm=BackendOptions(cache=False))
    with pytest.raises(BackendFailedError):
        asyncio.run(swept.run())
    runs = dump(tmp_path / "ray" / "agentsim.db", tables=("runs",))["runs"]
    assert runs and all((row[4], row[5]) == ("failed", "backend_failed") for row in runs)
    assert json.loads((tmp_path / "ray" / "summary.json").read_text())["stopped"]["stop_reason"] == "backend_failed"


def test_the_budget_holds_across_the_cluster(local_ray: Any, tmp_path: Path, standin_server: Any) -> None:
    """--max-calls counts every worker's requests, probes included: the server sees no more,
    and the runs stop as `stopped` with the budget's reason, as in process."""
    from agentsim.errors import BudgetExhausted

    server = standin_server(capacity=16, service_time_s=0.002)
    swept = experiment(tmp_path / "ray", executor="ray", runs=2, backend=f"openai:stand-in@{server.url}/v1",
                       llm=BackendOptions(cache=False, max_calls=150), overrides={"stop_at": "none"})
    with pytest.raises(BudgetExhausted):
        asyncio.run(swept.run())
    # Never one more than the budget; a few fewer only where a run's last reserved request was
    # cancelled on its way out when another worker's refusal stopped the sweep (seen under load).
    assert 140 <= server.stats.requests <= 150
    document = json.loads((tmp_path / "ray" / "summary.json").read_text())
    assert document["budget"]["stopped_by"] == "max_calls" and document["budget"]["calls"] == 150
    assert {(run["status"], run["stop_reason"]) for run in document["runs"]} == {("stopped", "max_calls")}


def test_url_credentials_reach_the_workers_and_nothing_records_them(local_ray: Any, tmp_path: Path,
                                                                     standin_server: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`openai:m@http://user:KEY@host/v1` on Ray: the workers send KEY (the server refuses
    anything else), and KEY is in neither the database nor summary.json."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    secret = "sk-ray-url-secret-1234"
    server = standin_server(capacity=8, api_key=secret)
    backend = f"openai:m@http://agent:{secret}@{server.url.removeprefix('http://')}/v1"
    swept = experiment(tmp_path / "ray", executor="ray", runs=2, backend=backend, llm=BackendOptions(cache=False),
                       overrides={"max_rounds": 3, "stop_at": "none", "agents": 8})
    asyncio.run(swept.run())
    assert server.stats.answered > 0
    assert [run["status"] for run in json.loads((tmp_path / "ray" / "summary.json").read_text())["runs"]] == ["done"] * 2
    for path in (tmp_path / "ray").iterdir():
        assert secret.encode() not in path.read_bytes(), f"the key was written to {path.name}"


def test_a_dead_workers_waiting_calls_do_not_keep_the_slots_they_are_granted() -> None:
    """A worker killed while some of its calls wait for a slot in the cluster limiter: the
    driver forgets the worker, which gives back the slots it held, and the calls still waiting
    are granted those slots in turn. Each must hand its slot straight back (it has nobody to
    send it): kept, the slots of a dead worker add up, and its run's next worker waited past
    its start-up probe's deadline for one (a CI failure of the test above)."""
    from agentsim.distributed.limits import ClusterLimiter

    async def scenario() -> bool:
        limiter = ClusterLimiter({"model": Limits(max_in_flight=2, adaptive=False)})
        assert await limiter.acquire("model", "dead/0", "dead", 0)
        assert await limiter.acquire("model", "dead/1", "dead", 0)
        waiting = [asyncio.create_task(limiter.acquire("model", f"dead/{n}", "dead", 0)) for n in (2, 3)]
        await asyncio.sleep(0.01)
        assert limiter.forget("dead") == 2
        assert await asyncio.gather(*waiting) == [False, False]  # granted after the worker was forgotten
        async with asyncio.timeout(1):
            return (await limiter.acquire("model", "next/0", "next", 0)
                    and await limiter.acquire("model", "next/1", "next", 0))

    assert asyncio.run(scenario())
