"""SIGN: the schema parser and decoder on real-looking replies, the retry-and-decode ladder, the
three conditions differing on the stand-in with one seed, tokens to threshold counting every
attempt, the lose-shift rule, prompts rebuilt from the store, and the user's mistakes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, cli, run_experiment, run_model

from agentsim.errors import ParameterError
from agentsim.games.sign import (
    NOT_COMPLIANT,
    NOT_IN_LEXICON,
    FreeTextDecoder,
    SchemaParser,
    SignGame,
    SignSituation,
    SignStandInSettings,
    lexicon,
    sign_grid,
)
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.model import BackendShare, PopulationModel
from agentsim.records import Decision
from agentsim.scheduler import Encounter
from agentsim.store import Store
from agentsim.variants import pinned_variants

NAMES = lexicon(12)


@pytest.mark.parametrize(("reply", "expected"), [
    ("@say {name: C3}", "C3"),
    ("  @say {name: C12}\n", "C12"),
    ("@say {name:C7}", "C7"),
    ("@say { name : C1 }", "C1"),
    ("say C3", NOT_COMPLIANT),
    ('@say {name: "C3"}', NOT_COMPLIANT),
    ("@say {name: C3} | it matches my memory", NOT_COMPLIANT),
    ("@say {name: c3}", NOT_COMPLIANT),
    ("@say {name: Ck}", NOT_COMPLIANT),
    ("I propose C3.", NOT_COMPLIANT),
    ("@say {name: C3}\n@say {name: C4}", NOT_COMPLIANT),
    ("@SAY {name: C3}", NOT_COMPLIANT),
    ("@say {name: C03}", NOT_COMPLIANT),
    ("@say {name: C13}", NOT_IN_LEXICON),
    ("", NOT_COMPLIANT),
])
def test_the_schema_parser_accepts_exactly_the_schema(reply: str, expected: str) -> None:
    parsed = SchemaParser(NAMES).parse(reply)
    if expected.startswith("C"):
        assert parsed == (expected, None)
    else:
        assert parsed.action is None and parsed.problem == expected


@pytest.mark.parametrize(("reply", "expected"), [
    ("I propose the name C3.", "C3"),
    ("say C3", "C3"),
    ('@say {name: "C3"}', "C3"),
    ("@say {name: c3}", "C3"),
    ("@say {name: C3} | it matches my memory", "C3"),
    ("C10 sounds good to me.", "C10"),
    ("I propose C3, but C7 would work for me too.", None),
    ("I propose C13 for this round.", None),
    ("@say {name: Ck}", None),
    ("Let me think about which name works best for both of us.", None),
])
def test_the_free_text_decoder_reads_exactly_one_lexicon_name(reply: str, expected: str | None) -> None:
    assert FreeTextDecoder(NAMES).decode(reply) == expected


class Scripted:
    """Replies by attempt (first ask, then the retry after the reminder), with fixed token counts."""

    name = "scripted"
    immediate = True

    def __init__(self, first: str, retry: str) -> None:
        self.first, self.retry = first, retry
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        if len(request.messages) == 2:
            return Completion(text=self.first, prompt_tokens=100, completion_tokens=10)
        return Completion(text=self.retry, prompt_tokens=120, completion_tokens=5)

    async def aclose(self) -> None:
        return None


def _two_agents(backend: Any, **changes: Any) -> dict[str, Any]:
    game = SignGame(agents=2, lexicon_size=2, max_rounds=1, **changes)
    model = run_model(game, seed=3, backend=backend)
    return model.readout.run_summary(model)


def test_tokens_to_threshold_count_every_attempt_including_discarded_first_replies() -> None:
    # Both agents first answer off-schema (discarded), then comply after the reminder.
    summary = _two_agents(Scripted("say C1", "@say {name: C1}"))
    assert summary["agreement_by_round"] == [1.0]
    per_agent = (100 + 10) + (120 + 5)
    assert summary["tokens_to_threshold"] == {"0.5": 2 * per_agent, "0.6": 2 * per_agent, "0.7": 2 * per_agent,
                                              "0.9": 2 * per_agent}
    assert summary["rounds_to_threshold"]["0.9"] == 1
    assert summary["compliance_rate"] == 0.0 and summary["retry_rate"] == 1.0
    assert summary["route_rates"]["compliant_after_retry"] == 1.0
    # Compliant at once: only the first attempt is paid for.
    assert _two_agents(Scripted("@say {name: C1}", "unused"))["tokens_to_threshold"]["0.5"] == 2 * 110


def test_the_ladder_decodes_free_text_then_gives_no_name() -> None:
    decoded = _two_agents(Scripted("say C2", "I still say C2"))
    assert decoded["route_rates"]["decoded"] == 1.0 and decoded["agreement_by_round"] == [1.0]
    assert decoded["tokens_to_threshold"]["0.5"] == 2 * (110 + 125)
    nothing = _two_agents(Scripted("I propose C1 or C2", "@say {name: Ck}"))
    assert nothing["route_rates"]["no_name"] == 1.0 and nothing["agreement_by_round"] == [0.0]
    assert nothing["tokens_to_threshold"]["0.5"] is None
    # The text's variant of the paper: a random valid name instead of none, recorded as a fallback.
    fallback = _two_agents(Scripted("I propose C1 or C2", "@say {name: Ck}"), fallback="random")
    assert fallback["route_rates"]["fallback"] == 1.0
    # Free-text conditions never re-ask: their parser is the decoder.
    free = _two_agents(Scripted("say C1", "unused"), condition="nl-sw")
    assert free["retry_rate"] == 0.0 and free["compliance_rate"] == 1.0


def test_constrained_decoding_sends_the_schema_as_a_regex_grammar() -> None:
    backend = Scripted("@say {name: C2}", "unused")
    _two_agents(backend, constrained_decoding=True)
    grammar = backend.requests[0].grammar
    assert grammar is not None and grammar.kind == "regex" and grammar.value == r"@say \{name: (C1|C2)\}"
    assert _two_agents(Scripted("say C1", "say C1"), condition="nl", constrained_decoding=True)["constrained_decoding"] is False
    # The stand-in honours a grammar as a server would: every reply complies.
    model = run_model(SignGame(agents=12, max_rounds=20, constrained_decoding=True), seed=1)
    summary = model.readout.run_summary(model)
    assert summary["compliance_rate"] == 1.0 and summary["retry_rate"] == 0.0


def test_the_three_conditions_differ_with_one_seed_on_the_stand_in() -> None:
    summaries, prompts = {}, {}
    for condition in ("nl", "nl-sw", "schema"):
        model = run_model(SignGame(condition=condition, agents=12, max_rounds=60), seed=5)
        summaries[condition] = model.readout.run_summary(model)
        agent = model.population[0]
        prompts[condition] = model.scenario.codec.messages(SignSituation(model.scenario.names, agent.current, tuple(agent.memory),
                                                                   61, 0))[0].content
    # What the model sees differs: no memory in NL, the schema demanded in Schema.
    assert "Your last partners proposed" not in prompts["nl"] and "Your last partners proposed" in prompts["nl-sw"]
    assert "@say {name: Ck}" in prompts["schema"] and "@say" not in prompts["nl-sw"]
    # How replies are read differs: only Schema re-asks and decodes free text.
    assert summaries["nl"]["retry_rate"] == summaries["nl-sw"]["retry_rate"] == 0.0
    assert summaries["schema"]["retry_rate"] > 0.05 and summaries["schema"]["route_rates"]["decoded"] > 0
    assert summaries["nl"]["route_rates"]["no_name"] > 0.1 > summaries["schema"]["route_rates"]["no_name"]
    # And so do the outcomes.
    histories = [tuple(summaries[c]["agreement_by_round"]) for c in ("nl", "nl-sw", "schema")]
    assert len(set(histories)) == 3
    assert summaries["schema"]["mean_agreement"] > summaries["nl"]["mean_agreement"]
    assert summaries["nl-sw"]["mean_agreement"] > summaries["nl"]["mean_agreement"]


def test_lose_shift_adopts_the_partners_name_with_probability_alpha() -> None:
    game = SignGame(agents=2, lexicon_size=4, alpha=0.5).for_experiment(0)
    model = PopulationModel(game, seed=0, backends=[BackendShare(StandInModel(game.standin_part().rules))])
    first, second = model.population

    def meet(first_die: float, second_die: float, said: tuple[str | None, str | None]) -> tuple[str, str]:
        first.current, second.current = "C1", "C2"
        drawn = (SignSituation(game.names, "C1", (), 1, 0, first_die), SignSituation(game.names, "C2", (), 1, 1, second_die))
        game.resolve(model, Encounter(0, 0, (first, second), views=drawn), (Decision(said[0]), Decision(said[1])))
        return first.current, second.current

    assert meet(0.49, 0.51, ("C1", "C2")) == ("C2", "C2")  # the first shifts (die < alpha), the second stays
    assert meet(0.99, 0.0, ("C1", "C2")) == ("C1", "C1")
    assert meet(0.0, 0.0, ("C3", "C3")) == ("C3", "C3")  # a match: win-stay on what was said
    assert meet(0.0, 0.0, (None, "C2")) == ("C2", "C2")  # no name to adopt from the first
    # Partner-only memory: what the partner said; the first said no name, so the second keeps C3.
    assert list(first.memory)[-1] == "C2" and list(second.memory)[-1] == "C3"
    # alpha = 0 never shifts, alpha = 1 always does (over a run, with the stand-in saying its current name).
    exact = SignStandInSettings(noise=0.0, follow_memory=0.0, free_none_rate=0.0, free_several_rate=0.0, schema_error_rate=0.0)
    still = run_model(SignGame(agents=12, max_rounds=30, alpha=0.0, standin=exact), seed=2)
    assert max(still.readout.run_summary(still)["agreement_by_round"]) == still.readout.run_summary(still)["agreement_by_round"][0]
    moving = run_model(SignGame(agents=12, max_rounds=30, alpha=0.75, standin=exact), seed=2)
    assert moving.readout.run_summary(moving)["final_agreement"] > still.readout.run_summary(still)["final_agreement"]


def test_every_prompt_rebuilds_exactly_from_the_store(tmp_path: Path) -> None:
    sent: list[Request] = []

    class Recording(StandInModel):
        def answer(self, request: Request) -> Completion:
            sent.append(request)
            return super().answer(request)

    game = SignGame(agents=6, max_rounds=8, standin=SignStandInSettings(schema_error_rate=0.5))
    run_experiment(game, tmp_path / "out", seed=1, backend=lambda scenario: Recording(scenario.standin_part().rules))
    store = Store(tmp_path / "out")
    rows = list(store.rows("SELECT t, agent, attempt FROM calls ORDER BY t, agent, attempt"))
    rebuilt = [store.messages(game.for_experiment(1), 1, t, agent, attempt) for t, agent, attempt in rows]
    store.close()
    assert any(attempt == 1 for _, _, attempt in rows), "the run should include retries"
    assert sorted(map(tuple, rebuilt)) == sorted(tuple(request.messages) for request in sent)


def test_grid_and_pinned_variants() -> None:
    grid = sign_grid()
    assert len(grid) == 2 * 3 + 2 * 2 * 3 * 2  # NL: N x alpha; NL-SW and Schema: N x K x alpha
    assert {cell["memory_length"] for cell in grid if cell["condition"] == "nl"} == {0}
    pinned = pinned_variants(grid, {"agents": "4", "alpha": "0.5"})
    assert len(pinned) == 1 + 2 + 2 and all("agents" not in cell and "alpha" not in cell for cell in pinned)
    assert pinned_variants([{"condition": "nl"}], {"condition": "schema"}) == ()


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"alpha": 1.5}, "alpha (the lose-shift probability) must be in [0, 1]"),
    ({"memory_length": -1}, "memory_length (K) must be >= 0"),
    ({"lexicon_size": 1}, "lexicon_size (M) must be at least 2"),
    ({"pool_size": 4}, "unknown parameter 'pool_size'"),  # SIGN's lexicon is C1..CM: lexicon_size (M)
    ({"committed": 2}, "unknown parameter 'committed'"),
    ({"condition": "json"}, None),
])
def test_impossible_parameters_say_what_to_fix(changes: dict[str, Any], fragment: str | None) -> None:
    if fragment is None:
        with pytest.raises(ParameterError, match="condition must be one of nl, nl-sw, schema"):
            SignGame().with_overrides({key: str(value) for key, value in changes.items()})
        return
    with pytest.raises(ParameterError, match=fragment.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        SignGame(**changes)


def test_the_scenario_file_runs_its_grid_and_the_analysis_draws_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cli(str(ROOT / "scenarios" / "sign_schema.py"), "--out", str(out), "--runs", "2", "--no-live",
                 "--set", "max_rounds=6", "--set", "agents=4", "--set", "alpha=0.5")
    assert result.returncode == 0, result.stderr
    runs = json.loads((out / "summary.json").read_text())["runs"]
    assert len(runs) == 5 * 2  # NL; NL-SW and Schema at K 5 and 10; two seeds each
    assert {(run["condition"], run["memory"]) for run in runs} == {("nl", 0), ("nl-sw", 5), ("nl-sw", 10),
                                                                 ("schema", 5), ("schema", 10)}
    assert all(len(run["agreement_by_round"]) == 6 and run["agents"] == 4 and run["alpha"] == 0.5 for run in runs)
    assert sorted({run["seed"] for run in runs}) == [0, 1]
    from agentsim.games.sign.report import main as analyse

    assert analyse([str(out)]) == 0
    for name in ("sign_agreement.png", "sign_tokens.png", "sign_agreement_table.csv", "sign_compliance.csv"):
        assert (out / "sign" / name).stat().st_size > 0
    table = (out / "sign" / "sign_agreement_table.csv").read_text().splitlines()
    assert table[0] == "experiment,N,K,NL,NL-SW,Schema" and len(table) == 4


def test_a_bad_parameter_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = cli(str(ROOT / "scenarios" / "sign_schema.py"), "--out", str(tmp_path / "out"), "--no-live",
                 "--set", "alpha=2")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "alpha (the lose-shift probability) must be in [0, 1] (got 2.0)" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_mixed_model_example_splits_agreement_by_model(tmp_path: Path) -> None:
    from agentsim.games.sign.report import load_runs, models_table
    from agentsim.scenario_files import load_scenario

    scenario, module = load_scenario(ROOT / "examples" / "mixed_sign_models.py")
    assert [variant["condition"] for variant in module.VARIANTS] == ["nl", "nl-sw", "schema"]
    summaries = run_experiment(scenario.with_params(max_rounds=15), tmp_path / "out", seed=1)
    (summary,) = summaries
    assert set(summary["by_model"]) == {"stand-in:phi-like", "stand-in:llama-like"}
    assert all(row["agents"] == 6 for row in summary["by_model"].values())
    assert summary["standin_favourites"] == {"stand-in:phi-like": "C1", "stand-in:llama-like": "C7"}
    assert set(summary["usage_by_backend"]) == {"stand-in:phi-like", "stand-in:llama-like"}
    store = Store(tmp_path / "out")
    models = {model for (model,) in store.rows("SELECT DISTINCT model FROM agents")}
    store.close()
    assert models == {"stand-in:phi-like", "stand-in:llama-like"}
    table = models_table(load_runs(tmp_path / "out"))
    assert table is not None and len(table.rows) == 2


def test_a_sign_run_resumes_after_an_interrupt(tmp_path: Path) -> None:
    game = SignGame(agents=6, max_rounds=12)
    whole = run_experiment(game, tmp_path / "whole", seed=2)[0]

    class Interrupting(StandInModel):
        calls = 0

        def answer(self, request: Request) -> Completion:
            Interrupting.calls += 1
            if Interrupting.calls == 40:
                raise KeyboardInterrupt
            return super().answer(request)

    with pytest.raises(KeyboardInterrupt):
        run_experiment(game, tmp_path / "cut", seed=2, checkpoint_seconds=0,
                       backend=lambda scenario: Interrupting(scenario.standin_part().rules))
    from helpers import Quiet

    from agentsim.runner import Experiment, ExperimentConfig

    experiment = Experiment(ExperimentConfig(scenario=game, out=tmp_path / "cut", seed=2, resume=True), Quiet())
    experiment.open()
    (resumed,) = asyncio.run(experiment.run())
    for key in ("agreement_by_round", "tokens_to_threshold", "route_rates"):
        assert resumed[key] == whole[key]


def test_the_report_section_builds_every_item_into_a_context(tmp_path: Path) -> None:
    from agentsim.analysis.recorded import find_experiments
    from agentsim.games.sign import report as sign_report  # noqa: F401  (registers where the report exists)
    from agentsim.games.sign.report import sign_applies, sign_section

    class Context:  # (as the report's: its experiments, read from the stores)
        def __init__(self, root: Path) -> None:
            self.root, self.items, self.experiments = root, [], find_experiments(root)

        def add_figure(self, name, title, figure, columns, rows, caption=""):  # type: ignore[no-untyped-def]
            figure.savefig(tmp_path / f"{name}.png")
            self.items.append((name, len(rows)))

        def add_table(self, name, title, columns, rows, caption=""):  # type: ignore[no-untyped-def]
            self.items.append((name, len(rows)))

    (tmp_path / "nothing").mkdir()
    empty = Context(tmp_path / "nothing")
    assert not sign_applies(empty)
    game = SignGame(agents=4, max_rounds=5)
    for condition in ("nl", "schema"):
        run_experiment(game.with_params(condition=condition), tmp_path / "runs" / condition, seed=1)
    context = Context(tmp_path / "runs")
    assert sign_applies(context)
    sign_section(context)
    names = dict(context.items)
    assert set(names) == {"sign_agreement", "sign_agreement_table", "sign_cells", "sign_tokens", "sign_compliance"}
    assert all(count > 0 for count in names.values())
    assert (tmp_path / "sign_agreement.png").stat().st_size > 0


def test_an_impossible_variant_is_refused_before_the_output_directory_exists(tmp_path: Path) -> None:
    from helpers import Quiet

    from agentsim.runner import Experiment, ExperimentConfig

    config = ExperimentConfig(scenario=SignGame(max_rounds=2), out=tmp_path / "out",
                              variants=({"condition": "nl"}, {"alpha": 3.0}))
    with pytest.raises(ParameterError, match=r"variant \{'alpha': 3.0\}: alpha \(the lose-shift probability\)"):
        Experiment(config, Quiet()).open()
    assert not (tmp_path / "out").exists()
