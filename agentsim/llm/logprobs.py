"""Each valid option's probability at the answer position, from a provider's top tokens.

Providers return, per generated token, the most likely alternatives and their log
probabilities. The answer position is the token where the first option named in the reply
begins. Each option's weight is the probability of the alternatives there that start it
(" Q", "Q" and "Q;" all start Q). Providers report raw probabilities (vLLM by default, TGI's
top tokens, local logits), so the sampling transformation is applied here as the sampler
would: temperature first (p^(1/T)), then top-k over the listed alternatives; the result is
renormalised over the options. Temperature 0 puts all weight on the most probable option.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence

TopTokens = Sequence[tuple[str, float]]  # (token text, log probability), most likely first


def answer_position(text: str, tokens: Sequence[str], options: Sequence[str]) -> int | None:
    """Index of the token where the first option named in `text` begins, or None."""
    if not options or not tokens:
        return None
    match = _option_pattern(frozenset(options)).search(text)
    if match is None:
        return None
    start, offset = match.start(), 0
    for index, token in enumerate(tokens):
        if offset + len(token) > start:
            return index
        offset += len(token)
    return None


@functools.lru_cache(maxsize=256)
def _option_pattern(options: frozenset[str]) -> re.Pattern[str]:
    """One pattern per option set (options come shuffled per prompt; the set recurs)."""
    ordered = sorted(options, key=lambda option: (-len(option), option))
    return re.compile(r"(?<![\w])(" + "|".join(re.escape(option) for option in ordered) + r")(?![\w])")


def option_probabilities(alternatives: TopTokens, options: Sequence[str], *, temperature: float,
                         top_k: int | None) -> dict[str, float] | None:
    """Options' probabilities from the top alternatives at the answer position (raw log
    probabilities), with temperature and top-k applied, renormalised over the options."""
    if not alternatives or not options:
        return None
    ranked = sorted(alternatives, key=lambda item: -item[1])
    if top_k is not None:
        ranked = ranked[:top_k]
    if temperature <= 0:
        weights = [(token, 1.0 if index == 0 else 0.0) for index, (token, _) in enumerate(ranked)]
    else:
        peak = ranked[0][1]
        weights = [(token, math.exp((logprob - peak) / temperature)) for token, logprob in ranked]
    totals = dict.fromkeys(options, 0.0)
    for token, weight in weights:
        option = _option_started_by(token, options)
        if option is not None:
            totals[option] += weight
    mass = sum(totals.values())
    if mass <= 0:
        return None
    return {option: value / mass for option, value in totals.items()}


def _option_started_by(token: str, options: Sequence[str]) -> str | None:
    stripped = token.strip().strip("'\"{[(:")
    if not stripped:
        return None
    if stripped in options:  # the usual case: the token is the whole option
        return stripped
    matches = [option for option in options if option.startswith(stripped) or stripped.startswith(option)]
    if len(matches) == 1:
        return matches[0]
    exact = [option for option in matches if stripped.rstrip(";,.}'\"") == option]
    return exact[0] if len(exact) == 1 else None


def from_token_list(text: str, tokens: Sequence[tuple[str, TopTokens]], options: Sequence[str], *,
                    temperature: float, top_k: int | None) -> Mapping[str, float] | None:
    """The whole path for providers that give (token, top alternatives) per position."""
    return at_answer(text, [token for token, _ in tokens], lambda index: tokens[index][1], options,
                     temperature=temperature, top_k=top_k)


def at_answer(text: str, tokens: Sequence[str], alternatives: Callable[[int], TopTokens], options: Sequence[str], *,
              temperature: float, top_k: int | None) -> Mapping[str, float] | None:
    """The whole path, reading the alternatives of the answer position only: an HTTP backend
    gets every token's alternatives as JSON, and converting all of them cost more CPU than
    the rest of reading the answer."""
    position = answer_position(text, tokens, options)
    if position is None:
        return None
    return option_probabilities(alternatives(position), options, temperature=temperature, top_k=top_k)
