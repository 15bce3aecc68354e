"""GovSim and Vallinder and Hughes's notebook, rule by rule where agentsim once differed
(issue 38, items 1-5): each test states the reference code's behaviour, with its file and line,
and checks that agentsim's default does the same (the kept alternative is a setting)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from helpers import run_experiment
from test_evolution import Scripted, run

from agentsim.games.commons import CommonsGame, parser
from agentsim.games.evolution import DonorGame, StagHunt
from agentsim.games.evolution.parsers import parse_donation
from agentsim.games.evolution.prompts import DonorView
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.store import Store


def _kinds(out: Path) -> list[str]:
    store = Store(out)
    kinds = [json.loads(context)["kind"] for (context,) in store.rows(
        "SELECT context FROM calls WHERE run = 1 AND attempt = 0 ORDER BY t")]
    store.close()
    return kinds


# --- 1. GovSim makes no reflection call without a memory to reflect on ------------------------------

def test_without_communication_nobody_reflects_as_govsim_has_no_statement_to_reflect_on(tmp_path: Path) -> None:
    """GovSim's reflection asks for one insight per statement and calls the model once per
    statement (fishing/agents/persona_v3/cognition/reflect_prompts.py:33); without communication
    the stock and the catch expire on the reflection day, so there is no call, no insight and no
    rating: a month is the villagers' harvests alone."""
    run_experiment(CommonsGame(communication=False, months=2, initial_stock=100), tmp_path / "silent", seed=3)
    kinds = _kinds(tmp_path / "silent")
    assert kinds and set(kinds) == {"harvest"}
    run_experiment(CommonsGame(months=1), tmp_path / "talking", seed=3)
    assert "reflection" in _kinds(tmp_path / "talking")  # with a conversation to remember, they reflect


# --- 2. the survivors' advice: the list of strategies ---------------------------------------------

def test_the_inherited_advice_is_the_list_of_strategies_as_the_notebook_formats_it(tmp_path: Path) -> None:
    """Donor_Game_with_Cultural_Evolution.ipynb:243 formats `inherited_strategies`, the list of
    the survivors' strategies (:1078), into the prompt: no names, no scores."""
    backend = Scripted({f"{generation}_{index}": 0.5 for generation in (1, 2) for index in (1, 2, 3, 4)})
    (summary,), store = run(DonorGame(agents=4, rounds=2, generations=2, games=1), tmp_path / "out", backend=backend)
    store.close()
    survivors = summary["generations"][0]["survivors"]
    inherit = [request.messages[1].content for request in backend.requests
               if "Here is the advice of the best-performing 50%" in request.messages[1].content]
    assert inherit
    expected = str([f"My strategy will be the one of {name}." for name in survivors])
    assert all(expected in text and "(final score" not in text for text in inherit)
    from agentsim.games.evolution.game import advice_block

    scored = advice_block([("1_2", 25.0, "My strategy will be x.")], with_scores=True)
    assert scored == "1_2 (final score 25): My strategy will be x."  # the setting keeps agentsim's wording


# --- 3. the donor's view of the chain: no prefix ----------------------------------------------------

def test_the_chain_is_shown_without_a_prefix_as_in_the_notebooks_running_branch() -> None:
    """Donor_Game_with_Cultural_Evolution.ipynb:752-756: traces are lists, so the prompt shows
    `get_last_three_reversed(last_trace)` alone; the "Here is what ..." prefix belongs to the
    branch for traces kept as strings, which never runs."""
    view = DonorView("1_1", 1, 1, 2, "My strategy will be x.", "", 10.0, "1_2", 15.0,
                     "In round 1, 1_2 donated 50.00% of their resources to 1_3.")
    text = DonorGame().codec.turn_prompt(view)
    assert "Here is what" not in text
    assert "units of the valuable resource.\nIn round 1, 1_2 donated 50.00%" in text
    prefixed = DonorGame(chain_prefix=True).codec.turn_prompt(view)
    assert "Here is what 1_2 and their earlier partners did in previous rounds: In round 1, 1_2" in prefixed


# --- 4. donations read as the notebook reads them --------------------------------------------------

def test_donations_are_read_as_the_notebook_reads_them() -> None:
    """ipynb:416 and :430: a number opening the answer (`^\\s*(\\d+(?:\\.\\d+)?)`); ipynb:423:
    "donate" or "punish", then the first number after it (`(donate|punish).*?(\\d+...)`)."""
    assert parse_donation("Justification: x\nAnswer: **3**", 10, "none").problem is not None
    assert parse_donation("Answer: $4", 10, "none").problem is not None
    assert parse_donation("Answer: 4.5 units", 10, "none").action == "donate 4.5"
    assert parse_donation("Answer: Punish, x = 2", 10, "costly").action == "punish 2"
    assert parse_donation("Answer: Donate, 2,5", 10, "costly").action == "donate 2.5"
    assert parse_donation("Answer: Refuse to play.", 10, "partner_choice").action == "refuse"
    assert parse_donation("Answer: 11", 10, "none").action == "donate 11"  # accepted: the game calls it invalid
    assert parse_donation("Answer: **3**", 10, "none", "agentsim").action == "donate 3"  # the kept reader
    assert parse_donation("Answer: 11", 10, "none", "agentsim").problem is not None


def test_a_donation_above_what_the_donor_holds_is_an_invalid_action_that_moves_nothing(tmp_path: Path) -> None:
    """ipynb:472 (`elif 0 <= response <= donor.resources`) and :539-555: anything else is
    recorded as "attempted an invalid action", nothing moves and the reply is not re-asked."""
    backend = Scripted({"1_2": 0.5}, answers={"1_1": "Justification: all in.\nAnswer: 50"})
    (summary,), store = run(DonorGame(agents=2, rounds=2, generations=1, games=1), tmp_path / "out", backend=backend)
    attempts = list(store.rows("SELECT COUNT(*) FROM calls WHERE context LIKE '[\"donor\",\"1_1\"%'"))
    store.close()
    (record,) = summary["generations"]
    assert record["payoffs"] == {"1_1": 20.0, "1_2": 5.0}  # 1_2 gave 5, 1_1's 50 moved nothing
    assert record["invalid_actions"] == 1 and record["fallbacks"] == {}
    assert attempts == [(1,)]  # asked once: the notebook accepts the reply


# --- 5. importance ratings ---------------------------------------------------------------------------

def test_a_list_number_is_not_read_as_the_rating() -> None:
    """GovSim writes "Rating (1 to 10): " itself and selects among 1-10 after it
    (fishing/agents/persona_v3/cognition/store_prompts.py:31-38): a reply that opens a numbered
    list is not rated by its list number."""
    assert parser.parse_importance("1. 10: The conversation is highly impactful for the village.").action == "10"
    assert parser.parse_importance("1. The conversation matters.\n2. It sets a limit.").problem is not None
    assert parser.parse_importance("Rating (1 to 10): 7").action == "7"
    assert parser.parse_importance("I rate it 8 out of 10.").action == "8"


# --- 6. constrained answers: the grammar each step sends --------------------------------------------

class Recording(StandInModel):
    """The stand-in, keeping every request (its grammar and options)."""

    name = "stand-in"

    def __init__(self, rules: Any) -> None:
        super().__init__(rules)
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        return self.answer(request)


def _recorded(scenario: Any, out: Path) -> Recording:
    backends: list[Recording] = []

    def backend(built: Any) -> Recording:
        backends.append(Recording(built.standin_part().rules))
        return backends[-1]

    run_experiment(scenario, out, seed=3, backend=backend)
    return backends[0]


def test_constrained_commons_answers_carry_govsims_constraints(tmp_path: Path) -> None:
    """GovSim constrains the harvest to a number, the conclusion to yes/no, the next speaker to
    the others, the rating to 1-10 and the limit to digits after "Answer: " (act_prompts.py:41-52,
    converse_prompts.py:78-100, store_prompts.py:32-38, reflect_prompts.py:144-155): with
    `constrained_decoding` each is the request's grammar, a harvest and a rating as a choice
    among the prompt's range, so scoring backends store them exactly."""
    backend = _recorded(CommonsGame(months=1, agents=3, constrained_decoding=True), tmp_path / "on")
    by_kind: dict[str, list[Request]] = {}
    for request in backend.requests:
        by_kind.setdefault(request.situation.kind, []).append(request)
    harvest = by_kind["harvest"][0]
    assert harvest.grammar is not None and harvest.options == tuple(str(n) for n in range(101))
    assert dict(harvest.grammar.choices)["Answer: 7 tons"] == "7"
    rating = by_kind["importance"][0]
    assert rating.grammar is not None and rating.options == tuple(str(n) for n in range(1, 11))
    utterance = by_kind["utterance"][0]
    assert utterance.grammar is not None and utterance.grammar.kind == "regex" and not utterance.grammar.choices
    speaker = utterance.situation.name
    others = [name for name in utterance.situation.participants if name != speaker]
    pattern = re.compile(utterance.grammar.value)
    assert pattern.fullmatch(f"Response: Ten each.\nConversation conclusion by me: no\nNext speaker: {others[0]}")
    assert pattern.fullmatch("Response: Ten each.\nConversation conclusion by me: yes")
    assert not pattern.fullmatch(f"Response: Ten each.\nConversation conclusion by me: no\nNext speaker: {speaker}")
    limit = by_kind["limit"][0].grammar
    assert limit is not None and re.fullmatch(limit.value, "Answer: 10") and re.fullmatch(limit.value, "Answer: N/A")
    reflection = by_kind["reflection"][0]
    assert reflection.grammar is not None and len(reflection.situation.memories) >= 2
    insights = re.compile(reflection.grammar.value)
    assert insights.fullmatch("1. Keep to ten tons (because of 1,2)\n2. The lake is full")
    assert not insights.fullmatch("Keep to ten tons")  # GovSim opens the list with "1."
    plain = _recorded(CommonsGame(months=1, agents=3), tmp_path / "off")
    assert all(request.grammar is None and not request.options for request in plain.requests)


def test_constrained_evolution_turns_carry_their_answer_formats(tmp_path: Path) -> None:
    """A donation as the prompt asks for it ("a real number", "Donate, x" / "Punish, x",
    "Refuse to play") and a hunt as a choice between STAG and HARE; strategies stay free."""
    donor = _recorded(DonorGame(agents=2, rounds=2, generations=1, games=1, constrained_decoding=True),
                      tmp_path / "donor")
    turns = [request for request in donor.requests if isinstance(request.situation, DonorView)]
    assert turns and all(request.grammar is not None for request in turns)
    assert all(request.grammar is None for request in donor.requests if not isinstance(request.situation, DonorView))
    amount = re.compile(turns[0].grammar.value)  # type: ignore[union-attr]
    assert amount.fullmatch("Answer: 3.5") and amount.fullmatch("Answer: 12") and not amount.fullmatch("Answer: -1")
    costly = DonorGame(punishment="costly", constrained_decoding=True).codec.grammar(turns[0].situation)
    assert costly is not None and re.fullmatch(costly.value, "Answer: Punish, 2")
    choice = DonorGame(punishment="partner_choice", constrained_decoding=True).codec.grammar(turns[0].situation)
    assert choice is not None and re.fullmatch(choice.value, "Answer: Refuse to play")
    stag = _recorded(StagHunt(agents=2, rounds=2, generations=1, constrained_decoding=True), tmp_path / "stag")
    hunts = [request for request in stag.requests if request.options]
    assert hunts and all(request.grammar is not None and dict(request.grammar.choices) ==
                         {"Answer: STAG": "STAG", "Answer: HARE": "HARE"} for request in hunts)
