"""`python -m agentsim import ainorms`: the AI-norms repository's published runs (Flint Ashery
et al. 2025) read as plain data into naming-game results directories that agentsim's own
analyses read. The files here are small ones written in the paper's format (a dict of runs,
each a `simulation` of players with their histories and a `tracker` of the interactions), never
the paper's data."""

from __future__ import annotations

import csv
import pickle
import random
import zipfile
from pathlib import Path
from typing import Any

import pytest
from helpers import cli, run_experiment

from agentsim.analysis.recorded import find_experiments, read_artifacts
from agentsim.analysis.report import build_report
from agentsim.analysis.stats import bias_test
from agentsim.errors import UserError
from agentsim.games.naming import NamingGame, NamingParams
from agentsim.games.naming.ainorms import ImportSettings, import_source, paper_flips
from agentsim.games.naming.ainorms_files import UnsafePickleError, condition, load_plain
from agentsim.games.naming.bias import individual_bias
from agentsim.games.naming.critical_mass import committed_experiments
from agentsim.games.naming.recorded import choices, consensus_names, success_matrix

NAMES = ("Q", "M")


def population_run(agents: int, interactions: int, *, seed: int, memory: int, start: str | None = None,
                   committed: int = 0, committed_to: str | None = None, answer: Any = None) -> dict[str, Any]:
    """One run as the paper's code keeps it. Uncommitted players answer by `answer(partner
    history, rng)` (default: their last partner's name, else Q); committed ones always `committed_to`."""
    rng = random.Random(seed)
    players: dict[int, dict[str, Any]] = {
        number: {"my_history": [], "partner_history": [], "interactions": [], "score": 0, "score_history": [],
                 "outcome": [], "committed_tag": False, "neighbours": [n for n in range(1, agents + 1) if n != number]}
        for number in range(1, agents + 1)}
    for player in players.values():
        for _ in range(memory if start else 0):
            player["my_history"].append(start)
            player["partner_history"].append(start)
            player["outcome"].append(100)
    for number in rng.sample(sorted(players), committed):
        players[number]["committed_tag"] = True
    choose = answer or (lambda history, rng: history[-1] if history else "Q")
    tracker: dict[str, list[Any]] = {"players": [], "answers": [], "outcome": []}
    for _ in range(interactions):
        first = rng.choice(sorted(players))
        second = rng.choice(players[first]["neighbours"])
        said = [committed_to if players[p]["committed_tag"] else choose(players[p]["partner_history"], rng)
                for p in (first, second)]
        for p, own, other in ((first, said[0], said[1]), (second, said[1], said[0])):
            players[p]["interactions"].append(second if p == first else first)
            players[p]["my_history"].append(own)
            players[p]["partner_history"].append(other)
            players[p]["outcome"].append(100 if own == other else -50)
        tracker["players"].append([first, second])
        tracker["answers"].append(said)
        tracker["outcome"].append(int(said[0] == said[1]))
    return {"simulation": players, "tracker": tracker,
            "convergence": {"converged_index": 0 if start else interactions, "committed_to": committed_to}}


def write_zip(path: Path, members: dict[str, Any]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, value in members.items():
            archive.writestr(f"toy_data/{name}", value if isinstance(value, bytes) else pickle.dumps(value, protocol=4))
    return path


def swap_file(committed: int, runs: int, *, interactions: int = 120) -> dict[int, Any]:
    return {run: population_run(4, interactions, seed=100 * committed + run, memory=2, start="Q",
                                committed=committed, committed_to="M") for run in range(runs)}


def strategy_test(own: list[str], partner: list[str], answers: list[str]) -> dict[str, Any]:
    """One player asked again and again from one memory, as the paper's strategy tests are."""
    outcome = [100 if mine == theirs else -50 for mine, theirs in zip(own, partner)]
    return {"simulation": {"my_history": own, "partner_history": partner, "interactions": [], "score": sum(outcome),
                           "score_history": outcome, "outcome": outcome}, "tracker": {"answers": answers}}


@pytest.fixture
def toy_zip(tmp_path: Path) -> Path:
    """A baseline (two runs from empty memories), Q left alone (size 0), 1 and 2 of 4 agents
    committed to M against Q, a bias test (first choices), two strategy tests (one memory each),
    and meta-prompting, not imported."""
    baseline = {"rules": "Context: Player 1 is playing a multi-round partnership game...",
                0: population_run(4, 40, seed=1, memory=2), 1: population_run(4, 30, seed=2, memory=2)}
    return write_zip(tmp_path / "toy_data.zip", {
        "toy_converged_baseline_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl": baseline,
        "toy_evolved_from_0_Q_M_-50_100_2mem_complete_4ps_120ints_0.5tmp.pkl":
            {0: population_run(4, 120, seed=7, memory=2, start="Q", committed_to="M")},
        "toy_swap_0_1cmtd_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl": swap_file(1, 2),
        "toy_swap_0_2cmtd_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl": swap_file(2, 2),
        "toy_no_memory_bias_test_QM_0mem.pkl": {"simulation": {"my_history": [], "partner_history": []},
                                                 "tracker": {"answers": ["M"] * 70 + ["Q"] * 30 + ["M"]}},
        "toy_meta_prompting_final.pkl": {2: {"min": [1, 0]}},
        "toy_bias_test_Q_M.pkl": strategy_test(["Q"], ["M"], ["M"] * 9 + ["Q"]),
        "toy_bias_test_QM_MQ.pkl": strategy_test(["Q", "M"], ["M", "Q"], ["M"] * 6 + ["Q"] * 4),
    })


def test_file_names_give_the_conditions() -> None:
    swap = condition("llama31_70b_swap_0_10cmtd_M_Q_-50_100_5mem_complete_24ps_0.5tmp.pkl")
    assert swap is not None
    assert (swap.model, swap.kind, swap.names, swap.committed, swap.agents, swap.memory_length) == \
        ("Llama-3.1-70B-Instruct", "committed", ("M", "Q"), 10, 24, 5)
    assert (swap.majority, swap.alternative, swap.success_payoff, swap.failure_payoff) == ("M", "Q", 100, -50)
    baseline = condition("claude_converged_baseline_Q_M_X_Y_F_J_P_R_C_D_-50_100_5mem_complete_24ps_0.5tmp.pkl")
    assert baseline is not None and baseline.kind == "baseline" and len(baseline.names) == 10 and baseline.majority is None
    evolved = condition("llama2_evolved_from_0_M_Q_-50_100_5mem_complete_24ps_800ints_0.5tmp.pkl")
    assert evolved is not None and (evolved.model, evolved.majority, evolved.interactions) == ("Llama-2-70b-Chat", "M", 800)
    bias = condition("claude_no_memory_bias_test_QMXYFJPRCD_0mem.pkl")
    assert bias is not None and (bias.kind, bias.names, bias.memory_length) == ("bias", tuple("QMXYFJPRCD"), 0)
    strategy = condition("claude_bias_test_MQ_QM.pkl")
    assert strategy is not None and (strategy.kind, strategy.names, strategy.memory_length) == ("strategy", NAMES, 2)
    assert condition("llama3_meta_prompting.pkl") is None and condition("claude_bias_test_MQ_Q.pkl") is None


def test_runs_become_naming_game_experiments_with_every_memory_rebuilt(toy_zip: Path, tmp_path: Path) -> None:
    result = import_source(toy_zip, tmp_path / "out")
    assert [entry.split("!")[1] for entry in result.skipped] == ["toy_data/toy_meta_prompting_final.pkl"]
    experiments = {experiment.where: experiment for experiment in find_experiments(tmp_path / "out")}
    baseline = experiments["toy/baseline_Q_M_N4_H2"]
    assert baseline.scenario_name == "naming_game" and baseline.names == NAMES and baseline.unresolved is None
    assert baseline.backend == "toy (AI-norms data)"
    imported = baseline.experiment["imported"]
    assert imported["source"].endswith("toy_converged_baseline_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl")
    assert imported["system_prompt"].startswith("Context: Player 1") and len(imported["sha256"]) == 64
    assert [row["summary"]["interactions"] for row in baseline.runs] == [40, 30]
    # every decision is stored with the memory the agent had: its last H=2 interactions
    expected = population_run(4, 40, seed=1, memory=2)
    seen: dict[int, list[tuple[str, str]]] = {}
    decided = [choice for choice in choices(baseline) if choice.run == 0]
    assert len(decided) == 80
    for t, (pair, answers) in enumerate(zip(expected["tracker"]["players"], expected["tracker"]["answers"])):
        for player, own, other in ((pair[0], answers[0], answers[1]), (pair[1], answers[1], answers[0])):
            choice = next(choice for choice in decided if choice.t == t and choice.agent == player - 1)
            assert [(entry[0], entry[1]) for entry in choice.memory] == seen.get(player, [])[-2:]
            assert choice.action == own
            seen.setdefault(player, []).append((own, other))
    # the success rate per round is the tracker's (rounds of N/2 = 2 interactions)
    outcomes = expected["tracker"]["outcome"]
    assert success_matrix(baseline)[0][:3].tolist() == [sum(outcomes[i:i + 2]) / 2 for i in (0, 2, 4)]
    assert consensus_names(baseline) == [row["summary"]["consensus_name"] for row in baseline.runs]


def test_committed_runs_give_fig3_panels_and_the_critical_mass(toy_zip: Path, tmp_path: Path) -> None:
    result = import_source(toy_zip, tmp_path / "out", ImportSettings(max_rounds=60))
    experiments = find_experiments(tmp_path / "out")
    panels = committed_experiments(experiments)
    assert len(panels) == 1
    panel, sizes = next(iter(panels.items()))
    assert (panel.who, panel.majority, panel.alternative, sorted(sizes)) == ("toy (AI-norms data)", "Q", "M", [1, 2])
    one = sizes[1][0]
    kinds = dict(one.store.rows("SELECT kind, COUNT(*) FROM agents WHERE run = 0 GROUP BY kind"))
    assert kinds == {"committed": 1, "llm": 3}
    # committed agents always say M and take no call: their moves are bare, without a context
    assert set(one.store.rows("SELECT DISTINCT d.action, d.context IS NULL FROM decisions d JOIN agents a "
                              "ON a.run = d.run AND a.agent = d.agent WHERE a.kind = 'committed'")) == {("M", 1)}
    # the toy's agents copy their last partner: with 2 of 4 committed Q falls, with 1 it holds
    [found] = result.critical_masses
    assert (found.result.majority, found.result.alternative) == ("Q", "M")
    flips = {size: (tried["flips"], tried["runs"]) for size, tried in found.result.tried.items()}
    assert flips[0] == (0, 1) and flips[2] == (2, 2)
    assert found.result.critical_mass == (1 if flips[1] == (2, 2) else 2)
    [(path, document)] = read_artifacts(tmp_path / "out")["critical_mass"]
    assert path.parent.parent == tmp_path / "out" / "toy" / "critical_mass_N4_H2"
    assert document["results"][0]["critical_mass"] == found.result.critical_mass
    assert document["results"][0]["paper_criterion_critical_mass"] == found.paper


def test_a_bias_test_becomes_first_choices_tested_as_the_paper_does(toy_zip: Path, tmp_path: Path) -> None:
    """Table S1's samples: every answer a first choice (an empty memory), tested with the
    exact binomial test; an odd last answer is left out and said."""
    import_source(toy_zip, tmp_path / "out")
    [probe] = [experiment for experiment in find_experiments(tmp_path / "out") if experiment.scenario_name == "individual_bias"]
    assert probe.experiment["imported"]["answers_left_out"] == 1
    [(key, test)] = individual_bias([probe]).items()
    assert key == ("toy (AI-norms data)", ("M", "Q")) and dict(zip(test.names, test.counts)) == {"M": 70, "Q": 30}
    assert test.p_value == bias_test({"M": 70, "Q": 30}).p_value < 0.001


def test_strategy_tests_become_table_1(toy_zip: Path, tmp_path: Path) -> None:
    """Each strategy test is a run of one StrategyProbe experiment per model, its memory in
    every decision's context: `strategies` reads Table 1 from them."""
    from agentsim.games.naming.strategies import strategy_table

    import_source(toy_zip, tmp_path / "out")
    table = strategy_table(find_experiments(tmp_path / "out"))
    assert table is not None and table.backend == "toy (AI-norms data)"
    rows = {row["memory"]: (row["p_M"], row["samples"]) for row in table.rows("M")}
    assert rows == {"Q,M": (0.9, 10), "Q,M;M,Q": (0.6, 10)}
    done = cli("strategies", str(tmp_path / "out" / "toy" / "strategies_QM"), "--name", "M")
    assert done.returncode == 0 and "Q,M;M,Q" in done.stdout and "P(M)=0.600" in done.stdout


def test_the_papers_mean_curve_criterion() -> None:
    """A size flips when the runs' mean curve ends at 95% over three bins, runs that flipped
    carried on at 1: one run short of 95% does not stop it, as it stops agentsim's every-run rule."""
    flipped, short, held = [0.5, 0.97, 0.98, 1.0], [0.5, 0.8, 0.85, 0.9], [0.5, 0.6, 0.6, 0.6]
    assert paper_flips([flipped, flipped], 4)
    assert not paper_flips([flipped, held], 4)
    assert paper_flips([flipped] * 9 + [short], 4)  # last three bins' means .953, .967, .99
    # a run that flipped and ended early counts as 1 afterwards: it carries one that ends at .93-.95
    early, late = [0.5, 0.96, 0.97, 0.99], [0.5, 0.6, 0.8, 0.9, 0.93, 0.94, 0.95]
    assert paper_flips([early, late], 7) and not paper_flips([late], 7)
    assert not paper_flips([[0.2, 0.3]], 30)


def test_a_pickle_naming_a_global_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    """A pickle that would create a file when loaded (builtins.open) is refused in one line,
    exit 2, and the file is never made: find_class refuses every global before it is looked up."""
    marker = tmp_path / "ran"
    payload = b"cbuiltins\nopen\n(" + pickle.dumps(str(marker), protocol=0)[:-1] + b"S'w'\ntR."
    pickle.loads(payload).close()  # what a plain load does: the file is made
    assert marker.exists()
    marker.unlink()
    source = write_zip(tmp_path / "evil.zip", {"evil_converged_baseline_Q_M_-50_100_5mem_complete_24ps_0.5tmp.pkl": payload})
    done = cli("import", "ainorms", str(source), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "names the global builtins.open" in lines[0] and "nothing was run" in lines[0]
    assert not marker.exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value, why", [
    ({0: {1, 2}}, "holds a set"),
    ({0: ("Q", "M")}, "holds a tuple"),
    ([[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]], "nested more than"),
])
def test_anything_but_plain_data_is_refused(value: Any, why: str) -> None:
    with pytest.raises(UnsafePickleError, match=why):
        load_plain(pickle.dumps(value, protocol=4), "toy.pkl")


def test_a_history_that_does_not_match_its_interactions_is_refused(tmp_path: Path) -> None:
    run = population_run(4, 20, seed=3, memory=2)
    run["simulation"][1]["my_history"].append("Q")  # one interaction more than the tracker holds
    source = write_zip(tmp_path / "bad.zip", {"toy_converged_baseline_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl": {0: run}})
    with pytest.raises(UserError, match="player 1's recorded history is not its interactions"):
        import_source(source, tmp_path / "out")


def test_the_command_prints_the_critical_mass_and_refuses_a_second_import(toy_zip: Path, tmp_path: Path) -> None:
    done = cli("import", "ainorms", str(toy_zip), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "toy, N=4, H=2: against Q (committed say M): critical mass" in done.stdout
    assert "10 runs in 6 experiments" in done.stdout
    assert "toy: individual bias [Q M] from its bias test: M=70, Q=30; binomial p=" in done.stdout
    again = cli("import", "ainorms", str(toy_zip), "--out", str(tmp_path / "out"))
    assert again.returncode == 2 and "already holds runs" in again.stderr


def test_a_users_runs_stand_beside_the_papers_in_one_report(toy_zip: Path, tmp_path: Path) -> None:
    """The imported runs and a run of agentsim's (the stand-in, the same condition) share
    Fig. 3A's panels' table and Table S3, each under its own backend."""
    root = tmp_path / "results"
    import_source(toy_zip, root / "paper")
    mine = NamingGame(NamingParams(names=NAMES, agents=4, memory_length=2, committed=2, majority_name="Q",
                                   committed_name="M", stop_at="flip", max_rounds=20))
    run_experiment(mine, root / "mine", runs=2)
    index = build_report(root)
    with (root / "report" / "fig3a_alternative_production.csv").open() as file:
        groups = {row["group"] for row in csv.DictReader(file)}
    assert "toy (AI-norms data)" in groups and any(group.startswith("stand-in") for group in groups)
    with (root / "report" / "table_s3_critical_mass.csv").open() as file:
        assert [row["backend"] for row in csv.DictReader(file)] == ["toy (AI-norms data)"]
    assert {"emergence", "bias", "critical_mass"} <= set(index["sections"])


def test_an_extension_code_is_refused_even_when_the_process_registered_it() -> None:
    """The C unpickler looks an extension code up in copyreg's cache before `find_class`: a
    process that once registered one (and loaded it) must still not let a published pickle call
    it. Refused before loading, by opcode."""
    import copyreg
    import pickle

    from agentsim.games.naming.ainorms_files import UnsafePickleError, load_plain

    called: list[str] = []
    copyreg.add_extension(__name__, "_record_call", 0x4A)
    globals()["_record_call"] = called.append
    try:
        pickle.loads(b"\x80\x02\x82\x4a.")  # the extension cache now holds the function
        with pytest.raises(UnsafePickleError, match="EXT1"):
            load_plain(b"\x80\x02\x82\x4aX\x03\x00\x00\x00ran\x85R.", "poisoned.pkl")
        assert called == []
    finally:
        copyreg.remove_extension(__name__, "_record_call", 0x4A)
        copyreg.clear_extension_cache()
