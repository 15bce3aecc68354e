"""The store: every prompt is recoverable exactly from its compact context, re-asks included;
rows and checkpoints land together."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path
from typing import Any

import pytest
from helpers import Quiet, dump, run_experiment

from agentsim.errors import OutputDirError
from agentsim.games.naming import NamingGame, NamingStandInSettings
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.prompts import PromptTemplate
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.seeding import derive_seed
from agentsim.store import STORE_VERSION, Store


class Recording(StandInModel):
    """The stand-in, keeping every request it was sent, by seed."""

    def __init__(self, rules: Any) -> None:
        super().__init__(rules)
        self.sent: dict[int, Request] = {}

    async def complete(self, request: Request) -> Completion:
        assert request.seed not in self.sent
        self.sent[request.seed] = request  # type: ignore[index]
        return self.answer(request)


@pytest.mark.parametrize("prompt", ["standard", "narrative", "bullet"])
def test_every_prompt_is_rebuilt_exactly_from_the_store(tmp_path: Path, prompt: str) -> None:
    backends: list[Recording] = []

    def recording(scenario: Any) -> Recording:
        backends.append(Recording(scenario.standin_part().rules))
        return backends[-1]

    game = NamingGame(agents=16, pool_size=4, prompt=prompt, stop_at="none", max_rounds=12,
                      standin=NamingStandInSettings(invalid_rate=0.3),
                      max_reasks=2, pairing="sequential", max_in_flight=3)
    run_experiment(game, tmp_path / "out", seed=9, backend=recording)
    store = Store(tmp_path / "out")
    scenario = game.for_experiment(9)
    rows = list(store.rows("SELECT agent, t, attempt FROM calls WHERE run = 1 ORDER BY agent, t, attempt"))
    checked = reasks = 0
    for agent, encounters in groupby(rows, key=lambda row: row[0]):
        # An agent's n-th encounter asks with seeds (run seed, agent, n, call number).
        for number, (_, calls) in enumerate(groupby(encounters, key=lambda row: row[1])):
            for _, t, attempt in calls:
                sent = backends[0].sent[derive_seed(derive_seed(9, agent), number, attempt)]
                assert store.messages(scenario, 1, t, agent, attempt) == sent.messages
                checked += 1
                reasks += attempt > 0
    store.close()
    assert checked == len(backends[0].sent)
    assert reasks > 10, "the test must exercise re-asks"


def test_invalid_replies_are_re_asked_then_fall_back_and_every_attempt_is_recorded(tmp_path: Path) -> None:
    game = NamingGame(agents=10, names=("Q", "M"), stop_at="none", max_rounds=10,
                      standin=NamingStandInSettings(invalid_rate=0.6), max_reasks=1)
    (summary,) = run_experiment(game, tmp_path / "out", seed=2)
    store = Store(tmp_path / "out")
    calls = list(store.rows("SELECT attempt, action, error FROM calls"))
    moves = list(store.rows("SELECT action FROM moves"))
    store.close()
    invalid = [row for row in calls if row[2] is not None]
    assert summary["invalid_replies"] == len(invalid) > 0
    assert summary["reasks"] == sum(1 for row in calls if row[0] == 1)
    assert summary["fallbacks"] > 0
    assert {row[2] for row in invalid} <= {"no valid option", "several options"}
    assert all(action in ("Q", "M") for (action,) in moves), "a fallback still plays a name from the pool"
    assert len(moves) == 2 * summary["interactions"]


def test_an_interaction_costs_under_two_hundred_bytes(tmp_path: Path) -> None:
    sizes = []
    for rounds in (20, 60):
        game = NamingGame(agents=200, pool_size=10, stop_at="none", max_rounds=rounds, pairing="rounds")
        (summary,) = run_experiment(game, tmp_path / str(rounds), seed=1)
        store = Store(tmp_path / str(rounds))
        sizes.append((store.bytes_on_disk(), summary["interactions"]))
        store.close()
    (small, few), (large, many) = sizes
    assert (large - small) / (many - few) < 200  # the marginal cost, without the schema and checkpoint


def test_committed_agents_have_moves_but_no_calls(tmp_path: Path) -> None:
    game = NamingGame(agents=12, names=("Q", "M"), committed=3, majority_name="M", stop_at="none", max_rounds=4)
    run_experiment(game, tmp_path / "out", seed=1)
    store = Store(tmp_path / "out")
    committed = {agent for agent, kind in store.rows("SELECT agent, kind FROM agents") if kind == "committed"}
    moved = {agent for (agent,) in store.rows("SELECT DISTINCT agent FROM moves")}
    called = {agent for (agent,) in store.rows("SELECT DISTINCT agent FROM calls")}
    store.close()
    assert len(committed) == 3 and committed <= moved and not committed & called


def test_every_shape_of_decision_row_is_written_whole(tmp_path: Path) -> None:
    """Rows are inserted by shape (an answer, a bare move, everything else), with the NULL
    columns of the short shapes left out; read back, each row has every column it was given."""
    from agentsim.records import CallRecord, EncounterRecord, Move
    from agentsim.store import Recorder

    recorder = Recorder(run=1)
    reasked = [CallRecord(3, 0, "ctx", "{'value': A or B", None, 10, 2, 50, "several options"),
               CallRecord(3, 1, "", "{'value': B", "B", 12, 2, 40)]
    errored = [CallRecord(4, 0, "ctx4", "", None, latency_us=9, error="timeout", fallback=True)]
    weighed = [CallRecord(5, 0, "ctx5", "A", "A", 8, 1, 30, None, {"A": 0.75, "B": 0.25})]
    drawn = [CallRecord(6, 0, "ctx6", "B", "B", 0, 0, 5, None, {"A": 0.75, "B": 0.25}, sampled_locally=True)]
    recorder.add(EncounterRecord(0, 0, 0, [Move(3, "B", -50), Move(7, "A", -50)], reasked))
    recorder.add(EncounterRecord(1, 0, 1, [Move(4, "A", 100), Move(5, "A", 100)], errored + weighed))
    recorder.add(EncounterRecord(2, 0, 1, [Move(6, "B", -50)], drawn))
    store = Store(tmp_path)
    store.commit(recorder, b"", 2)
    rows = list(store.rows("SELECT * FROM decisions ORDER BY t, agent, attempt"))
    store.close()
    assert rows == [
        (1, 0, 3, 0, None, None, None, "ctx", "{'value': A or B", 10, 2, 50, "several options", None, None, None),
        (1, 0, 3, 1, "B", -50, "B", "", "{'value': B", 12, 2, 40, None, None, None, None),
        (1, 0, 7, 0, "A", -50, None, None, None, None, None, None, None, None, None, None),
        (1, 1, 4, 0, "A", 100, None, "ctx4", "", 0, 0, 9, "timeout", None, 1, None),
        (1, 1, 5, 0, "A", 100, "A", "ctx5", "A", 8, 1, 30, None, '{"A": 0.75, "B": 0.25}', None, None),
        (1, 2, 6, 0, "B", -50, "B", "ctx6", "B", 0, 0, 5, None, '{"A": 0.75, "B": 0.25}', None, 1),
    ]


def test_a_store_from_before_the_new_option_draws_is_not_resumed(tmp_path: Path) -> None:
    """Option orders were drawn differently before store version 3: continuing such a run would
    mix two processes in one run, so resuming it stops with the fix, and the store is untouched."""
    import sqlite3

    scenario = NamingGame(agents=6, max_rounds=2)
    run_experiment(scenario, tmp_path)
    assert Store(tmp_path).experiment()["store_version"] == STORE_VERSION
    with sqlite3.connect(tmp_path / "agentsim.db") as connection:
        connection.execute("UPDATE experiment SET value = '2' WHERE key = 'store_version'")
    before = dump(tmp_path / "agentsim.db")
    config = ExperimentConfig(scenario=scenario, out=tmp_path, seed=1, resume=True)
    with pytest.raises(OutputDirError, match=r"drew option orders differently \(store version 2"):
        Experiment(config, Quiet()).open()
    assert dump(tmp_path / "agentsim.db") == before


def test_prompts_rebuilt_from_the_store_use_the_template_text_recorded_with_it(tmp_path: Path) -> None:
    """A template file edited after the run: the analysis rebuilds the prompts that were sent,
    from the text the store recorded, not from today's file."""
    from agentsim.analysis.recorded import RecordedExperiment

    template = tmp_path / "mine.txt"
    template.write_text(PromptTemplate.load("naming", "standard").text, encoding="utf-8")
    backends: list[Recording] = []

    def recording(scenario: Any) -> Recording:
        backends.append(Recording(scenario.standin_part().rules))
        return backends[-1]

    game = NamingGame(agents=6, pool_size=3, prompt=str(template), stop_at="none", max_rounds=3)
    run_experiment(game, tmp_path / "out", seed=4, backend=recording)
    template.write_text(template.read_text(encoding="utf-8").replace("Player 1", "Player One"), encoding="utf-8")
    recorded = RecordedExperiment(tmp_path / "out")
    scenario = recorded.scenario
    assert "Player One" not in scenario.template.text
    sent = {request.messages for request in backends[0].sent.values()}
    rows = list(recorded.store.rows("SELECT t, agent, attempt FROM calls WHERE run = 1"))
    assert rows and {recorded.store.messages(scenario, 1, t, agent, attempt) for t, agent, attempt in rows} == sent
    assert "Player One" in game.for_experiment(4).template.text  # today's file says something else
    recorded.close()
