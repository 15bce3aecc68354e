"""Exact option distributions under a choice grammar, by teacher-forced scoring.

A choice grammar (`Grammar.choice`) allows a finite set of replies, one per option, none a
prefix of another: the naming game's `{'value': Q;`. The probability agentsim stores for an
option is the probability that the run's own sampler writes that option's reply. The sampler
works token by token, and a reply can be spelled by many token paths (`{'` `value` or `{`
`'value`...), so the probability is a sum over the tree of token paths that spell a prefix of a
reply. At each node of the tree the sampler's distribution over the next token is the backend's
own chain: the raw logits, masked to the tokens the grammar allows there (those whose text keeps
the reply a prefix of an allowed one; the end of generation once a reply is complete), then
top-k, top-p, temperature, normalised, as llama-cpp-python builds it (agentsim's transformers
sampler cuts top-p after the temperature: `tempered_top_p`). A path ends where its text
names one option only: every continuation from there spells that option's reply, since the
grammar allows nothing else and `max_tokens` leaves room for the longest reply (one byte per
token at worst). Paths that are still open after `max_tokens` tokens name no option; they are
counted apart (`truncated`), never spread over the options.

The shared prefix is scored once: the scorer asks for the logits after a path, and the walk goes
depth first, so each node costs one token of evaluation with the KV cache of its parent.
Nodes whose path probability is below `prune` are not expanded; their mass is kept as
`unscored`, which bounds the error: each option's true probability lies in
[p, p + unscored]. Nothing else is approximated.

Repetition penalties change the logits along a path with the tokens already written; the walk
does not model them, so a request with one gets no distribution (`can_score`).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import Request

PRUNE = 1e-5  # path probability below which a node is not expanded (its mass is `unscored`)
KEPT = 8192  # distributions kept per model (a critical-mass run sees a few thousand prompts)


@dataclasses.dataclass(frozen=True, slots=True)
class OptionDistribution:
    """Each option's probability of being the reply, what was left unscored (an upper bound on
    every option's error), and the probability of a reply that names no option."""

    probabilities: dict[str, float]
    unscored: float = 0.0
    truncated: float = 0.0
    nodes: int = 0  # token paths evaluated, for tuning


class KeptDistributions:
    """Distributions already scored, by the prompt's tokens and what the sampler depends on, the
    least recently used dropped past `size`: a prompt asked again costs no second scoring."""

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self.kept: collections.OrderedDict[bytes, OptionDistribution] = collections.OrderedDict()
        self.scored = 0  # distributions computed, not found here

    def get_or_score(self, request: Request, prompt: bytes, score: Callable[[], OptionDistribution]) -> OptionDistribution:
        sampling, grammar = request.sampling, request.grammar
        key = hashlib.blake2b(repr((grammar.choices if grammar else (), sampling.temperature, sampling.top_k,
                                    sampling.top_p, sampling.max_tokens)).encode() + prompt, digest_size=16).digest()
        known = self.kept.get(key)
        if known is not None:
            self.kept.move_to_end(key)
            return known
        distribution = self.kept[key] = score()
        self.scored += 1
        if len(self.kept) > self.size:
            self.kept.popitem(last=False)
        return distribution

    def clear(self) -> None:
        self.kept.clear()


class TokenTable:
    """The vocabulary as the grammar sees it: each token's bytes, looked up by bytes."""

    def __init__(self, pieces: Sequence[bytes], end_tokens: Iterable[int]) -> None:
        self.end_tokens = tuple(sorted(set(end_tokens)))
        self.pieces = [b"" if token in self.end_tokens else piece for token, piece in enumerate(pieces)]
        self.by_piece: dict[bytes, list[int]] = {}
        for token, piece in enumerate(pieces):
            if piece and token not in self.end_tokens:  # the grammar rejects empty pieces
                self.by_piece.setdefault(piece, []).append(token)

    def piece(self, token: int) -> bytes:
        """The bytes a token writes (b"" for the end of generation and for empty pieces)."""
        return self.pieces[token] if 0 <= token < len(self.pieces) else b""

    def allowed(self, replies: Collection[bytes], written: bytes) -> tuple[list[tuple[int, bytes]], list[int]]:
        """What a choice grammar lets the sampler write after `written`: the tokens that keep the
        text a prefix of a reply (with their bytes), and the end of generation once it is one."""
        remaining = [reply[len(written):] for reply in replies if reply.startswith(written) and reply != written]
        return self.continuing(remaining), list(self.end_tokens) if written in replies else []

    def continuing(self, remaining: Iterable[bytes]) -> list[tuple[int, bytes]]:
        """The tokens whose bytes start one of the `remaining` texts, each with its bytes."""
        found: dict[int, bytes] = {}
        for text in remaining:
            for end in range(1, len(text) + 1):
                piece = text[:end]
                for token in self.by_piece.get(piece, ()):
                    found[token] = piece
        return sorted(found.items())


def can_score(request: Request) -> bool:
    """Whether the walk models this request's sampler exactly: a choice grammar, and no
    repetition penalty."""
    grammar = request.grammar
    penalty = request.sampling.repetition_penalty
    return grammar is not None and bool(grammar.choices) and penalty in (None, 1.0)


def sampler_probabilities(logits: np.ndarray, *, temperature: float, top_k: int | None,
                          top_p: float | None, tempered_top_p: bool = False) -> np.ndarray:
    """A sampler after the grammar, over the allowed tokens' raw logits (in token order): top-k,
    top-p, temperature, softmax. llama.cpp cuts top-p on the untempered softmax of what top-k
    left; `tempered_top_p` cuts it after the temperature instead, as agentsim's transformers
    sampler does (llm/local.py). Temperature 0 is greedy."""
    values = np.asarray(logits, dtype=np.float64)
    result = np.zeros(len(values))
    if not len(values):
        return result
    if temperature <= 0:
        result[int(np.argmax(values))] = 1.0
        return result
    order = np.argsort(-values, kind="stable")
    if top_k is not None and top_k > 0:
        order = order[:top_k]
    kept = values[order]
    if top_p is not None and top_p < 1:
        weights = np.exp((kept - kept[0]) / (temperature if tempered_top_p else 1.0))
        cumulative = np.cumsum(weights / weights.sum())
        order = order[: int(np.searchsorted(cumulative, top_p)) + 1]
        kept = values[order]
    weights = np.exp((kept - kept[0]) / temperature)
    result[order] = weights / weights.sum()
    return result


def option_distribution(choices: Mapping[str, str], table: TokenTable,
                        next_logits: Callable[[tuple[int, ...]], Any], *, temperature: float,
                        top_k: int | None, top_p: float | None, max_tokens: int,
                        prune: float = PRUNE, tempered_top_p: bool = False) -> OptionDistribution:
    """The sampler's probability of each option's reply. `choices` maps each allowed reply to
    its option; `next_logits(path)` gives the raw next-token logits after the prompt and
    `path` (token ids), called depth first so that consecutive paths share all but their last
    token."""
    replies = {reply.encode(): option for reply, option in choices.items()}
    totals = dict.fromkeys(choices.values(), 0.0)
    unscored = truncated = 0.0
    nodes = 0
    stack: list[tuple[tuple[int, ...], bytes, float]] = [((), b"", 1.0)]
    while stack:
        path, written, probability = stack.pop()
        if len(path) >= max_tokens:
            truncated += probability
            continue
        candidates, ends = table.allowed(replies, written)
        tokens = [token for token, _ in candidates] + ends
        if not tokens:  # no token spells the rest of any reply: the grammar would be stuck
            truncated += probability
            continue
        logits = np.asarray(next_logits(path))
        nodes += 1
        chances = sampler_probabilities(logits[tokens], temperature=temperature, top_k=top_k, top_p=top_p,
                                        tempered_top_p=tempered_top_p)
        for (token, piece), chance in zip(candidates, chances):
            if chance <= 0:
                continue
            mass = probability * chance
            text = written + piece
            named = {option for reply, option in replies.items() if reply.startswith(text)}
            if len(named) == 1:
                totals[named.pop()] += mass
            elif mass < prune:
                unscored += mass
            else:
                stack.append((path + (token,), text, mass))
        if ends:
            totals[replies[written]] += probability * float(chances[len(candidates):].sum())
    return OptionDistribution({option: float(value) for option, value in totals.items()}, unscored=float(unscored),
                              truncated=float(truncated), nodes=nodes)
