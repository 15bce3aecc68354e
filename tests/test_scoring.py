"""Exact option distributions under a choice grammar (llm/scoring.py), on a toy vocabulary
whose logits are a fixed function of the path: the walk is checked against an independent
enumeration of every token path, and against the sampler's order (grammar before top-k)."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from agentsim.errors import ParameterError
from agentsim.llm.base import Grammar, Request, Sampling
from agentsim.llm.grammars import to_gbnf
from agentsim.llm.scoring import TokenTable, can_score, option_distribution, sampler_probabilities

# A vocabulary where each reply can be spelled many ways (every character is a token too, as in
# byte-level vocabularies), with tokens the grammar forbids (" Max", "1") that the model likes
# best, and an end-of-generation token.
PIECES = ["<end>", "{", "{'", "'", "value", "val", "ue", "':", " ", ": ", "Q", "M", "Q;", ";", " Max", "1", "v", "a",
          "l", "u", "e", ":"]
END = 0
CHOICES = {"{'value': Q;": "Q", "{'value': M;": "M"}


def _logits(path: tuple[int, ...]) -> np.ndarray:
    """A fixed pseudo-random function of the path; the forbidden tokens are always the favourites."""
    digest = hashlib.sha256(repr(path).encode()).digest()
    values = np.array([digest[index % len(digest)] / 32.0 for index in range(len(PIECES))])
    values[PIECES.index(" Max")] += 10
    values[PIECES.index("1")] += 9
    return values


def _table() -> TokenTable:
    return TokenTable([piece.encode() if token != END else b"" for token, piece in enumerate(PIECES)], [END])


def _enumerate(temperature: float, top_k: int | None) -> dict[str, float]:
    """Every token path that spells a reply, followed to its end, with the sampler's chances:
    an independent, unpruned reckoning of what the walk computes."""
    totals = dict.fromkeys(CHOICES.values(), 0.0)

    def follow(path: tuple[int, ...], written: str, probability: float) -> None:
        if written in CHOICES:
            totals[CHOICES[written]] += probability
            return
        allowed = [token for token, piece in enumerate(PIECES)
                   if token != END and any(reply.startswith(written + piece) for reply in CHOICES)]
        logits = _logits(path)[allowed]
        ranked = sorted(range(len(allowed)), key=lambda index: -logits[index])[: top_k or len(allowed)]
        weights = {allowed[index]: math.exp(logits[index] / temperature) for index in ranked}
        total = sum(weights.values())
        for token, weight in weights.items():
            follow(path + (token,), written + PIECES[token], probability * weight / total)

    follow((), "", 1.0)
    return totals


@pytest.mark.parametrize(("temperature", "top_k"), [(1.0, None), (0.5, 2), (0.7, 1)])
def test_the_walk_equals_every_path_followed_to_its_end(temperature: float, top_k: int | None) -> None:
    found = option_distribution(CHOICES, _table(), _logits, temperature=temperature, top_k=top_k, top_p=None,
                                max_tokens=12, prune=0.0)
    exact = _enumerate(temperature, top_k)
    assert found.probabilities == pytest.approx(exact, abs=1e-12)
    assert sum(found.probabilities.values()) == pytest.approx(1.0, abs=1e-12) and found.truncated == 0
    assert found.nodes > 4, "several spellings of the shared prefix were scored"


def test_pruned_mass_bounds_the_error_and_the_sum() -> None:
    exact = _enumerate(1.0, None)
    pruned = option_distribution(CHOICES, _table(), _logits, temperature=1.0, top_k=None, top_p=None, max_tokens=12,
                                 prune=0.05)
    assert pruned.unscored > 0
    assert 1 - pruned.unscored - 1e-12 <= sum(pruned.probabilities.values()) <= 1 + 1e-12
    for option, probability in pruned.probabilities.items():
        assert probability - 1e-12 <= exact[option] <= probability + pruned.unscored + 1e-12


def test_the_grammar_masks_before_top_k() -> None:
    """With top-k 1, a sampler that cut before masking would keep " Max" and find nothing allowed:
    llama.cpp's chain masks first, so the best allowed token is certain."""
    found = option_distribution(CHOICES, _table(), _logits, temperature=0.5, top_k=1, top_p=None, max_tokens=12)
    assert sorted(found.probabilities.values()) == [0.0, pytest.approx(1.0)]


def test_greedy_follows_the_best_allowed_token_and_short_budgets_count_apart() -> None:
    greedy = option_distribution(CHOICES, _table(), _logits, temperature=0.0, top_k=None, top_p=None, max_tokens=12)
    assert sorted(greedy.probabilities.values()) == [0.0, 1.0]
    cut = option_distribution(CHOICES, _table(), _logits, temperature=1.0, top_k=None, top_p=None, max_tokens=2,
                              prune=0.0)
    assert cut.truncated > 0 and sum(cut.probabilities.values()) + cut.truncated == pytest.approx(1.0)


def test_top_p_keeps_the_smallest_head_reaching_p_before_temperature() -> None:
    logits = np.log(np.array([0.5, 0.3, 0.2]))
    kept = sampler_probabilities(logits, temperature=1.0, top_k=None, top_p=0.7)
    assert kept == pytest.approx([0.5 / 0.8, 0.3 / 0.8, 0.0])
    assert sampler_probabilities(logits, temperature=1.0, top_k=None, top_p=0.5) == pytest.approx([1.0, 0.0, 0.0])


def test_a_choice_grammar_is_a_finite_set_of_replies() -> None:
    grammar = Grammar.choice({"Q": "{'value': Q;", "M": "{'value': M;"})
    assert dict(grammar.choices) == CHOICES and grammar.longest_reply_tokens() == len("{'value': Q;")
    assert to_gbnf(grammar) == 'root ::= "{\'value\': Q;" | "{\'value\': M;"\n'
    request = Request(messages=(), sampling=Sampling(), options=("Q", "M"), grammar=grammar)
    assert can_score(request)
    assert not can_score(Request(messages=(), sampling=Sampling(repetition_penalty=1.1), options=("Q", "M"),
                                 grammar=grammar)), "a penalty the walk does not model: no distribution"
    assert not can_score(Request(messages=(), sampling=Sampling(), grammar=Grammar(kind="regex", value="Q|M")))
    with pytest.raises(ParameterError, match="begin another"):
        Grammar.choice({"Q": "{'value': Q", "QQ": "{'value': QQ"})


def test_the_naming_grammar_leaves_room_for_every_reply() -> None:
    """Finding 3 of issue 25: with 6 tokens a constrained reply could stop at `{'value': `. The
    game raises max_tokens to the longest reply's bytes (a token writes one byte at least)."""
    from agentsim.games.naming import NamingGame

    letters = NamingGame(names=("Q", "M"), constrained_decoding=True, max_tokens=6).for_experiment(0)
    assert letters.sampling().max_tokens == len("{'value': Q;") == letters.grammar().longest_reply_tokens()
    strings = NamingGame(pool_size=3, name_style="random", constrained_decoding=True).for_experiment(0)
    assert strings.sampling().max_tokens == len("{'value': abcdef;")
    assert NamingGame(names=("Q", "M"), max_tokens=6).for_experiment(0).sampling().max_tokens == 6, "free text: as set"
    assert NamingGame(names=("Q", "M"), constrained_decoding=True, max_tokens=40).sampling().max_tokens == 40
