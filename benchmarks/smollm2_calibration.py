"""The constrained harvest's stored distribution against SmolLM2's own answers over many seeds
(GovSim on the laptop model; tests/test_smollm2_commons.py is the 60-seed check).

    python benchmarks/smollm2_calibration.py [--seeds 1000] [--stock 80] [--temperature 0.7]

Asks the month's first harvest prompt (John, `constrained_decoding`) with seeds 0..N-1 through
`local:smollm2` in process, and compares the exact distribution agentsim stores for it with the
answers: each amount's count against its expected count, a chi-square test over the amounts
(those expected fewer than 5 times pooled) and the exact binomial test of the most likely
amount. With `--diagnose` it also takes the answers apart where a miscalibration would come
from: the first token's frequencies against the scored root (the sampler), the distribution
scored again in a fresh context and with the prompt's last position as a batch evaluates it
(the KV cache and its reuse). Prints figures; asserts nothing. Needs the `local` extra. Minutes
on two free cores.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from collections import Counter

from scipy import stats

from agentsim.games.commons import CommonsGame
from agentsim.games.commons.grammars import answer_options
from agentsim.games.commons.situations import CommonsSituation
from agentsim.llm.base import Completion, Request
from agentsim.llm.llamacpp import LlamaCppModel


def harvest(stock: int) -> CommonsSituation:
    situation = CommonsSituation(kind="harvest", month=1, agent=0, name="John", others=("Kate", "Jack"),
                                 date="2024-01-01", stock=stock,
                                 memories=(("2024-01-01", f"Before everyone fishes, there are {stock} tons of fish in the lake."),))
    return dataclasses.replace(situation, options=answer_options(situation))


def chi_square(counts: Counter[str], distribution: dict[str, float], seeds: int) -> tuple[float, int]:
    """Pearson's test over the amounts, those expected fewer than 5 times pooled into one bin."""
    observed, expected, pooled_observed, pooled_expected = [], [], 0, 0.0
    for option, probability in distribution.items():
        if probability * seeds >= 5:
            observed.append(counts.get(option, 0))
            expected.append(probability * seeds)
        else:
            pooled_observed += counts.get(option, 0)
            pooled_expected += probability * seeds
    if pooled_expected > 0:
        observed.append(pooled_observed)
        expected.append(pooled_expected)
    scale = sum(observed) / sum(expected)
    result = stats.chisquare(observed, [value * scale for value in expected])
    return float(result.pvalue), len(observed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--stock", type=int, default=80)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--diagnose", action="store_true")
    options = parser.parse_args()
    game = CommonsGame(agents=3, constrained_decoding=True, temperature=options.temperature)
    situation = harvest(options.stock)
    sampling, grammar = game.params.sampling(), game.codec.grammar(situation)
    model = LlamaCppModel(name="local:smollm2", path="smollm2", threads=1)
    requests = [Request(messages=game.codec.messages(situation), sampling=sampling, seed=seed, options=situation.options,
                        grammar=grammar) for seed in range(options.first_seed, options.first_seed + options.seeds)]
    started = time.perf_counter()

    async def ask() -> list[Completion]:
        return [await model.complete(request) for request in requests]

    replies = asyncio.run(ask())
    wall = time.perf_counter() - started
    distribution = replies[0].option_probabilities or {}
    answered = Counter(game.codec.parse(reply.text, situation).action for reply in replies)
    focus = max(distribution, key=lambda amount: distribution[amount])
    binomial = stats.binomtest(answered[focus], options.seeds, min(max(distribution[focus], 0.0), 1.0))
    pvalue, bins = chi_square(answered, distribution, options.seeds)
    print(f"SmolLM2-135M, harvest at stock {options.stock}, temperature {options.temperature}, seeds "
          f"{options.first_seed}..{options.first_seed + options.seeds - 1}: {wall:.0f} s")
    print(f"unreadable: {answered.get(None, 0)}; unscored mass {replies[0].unscored:.1e}; every reply carries the same "
          f"distribution: {all(reply.option_probabilities == distribution for reply in replies)}")
    print(f"most likely: {focus} tons, stored P = {distribution[focus]:.4f}, answered {answered[focus]}/{options.seeds} "
          f"(expected {distribution[focus] * options.seeds:.1f}), exact binomial p = {binomial.pvalue:.3f}")
    print(f"chi-square over {bins} bins: p = {pvalue:.3f}")
    for amount, probability in sorted(distribution.items(), key=lambda item: -item[1])[:12]:
        print(f"  {amount:>4} tons: stored {probability:.4f}, expected {probability * options.seeds:7.1f}, answered "
              f"{answered.get(amount, 0):5d}")
    if options.diagnose:
        diagnose(model, requests[0], distribution)
    asyncio.run(model.aclose())
    return 0


def diagnose(model: LlamaCppModel, request: Request, stored: dict[str, float]) -> None:
    """The stored distribution against the same prompt scored again: in a fresh context (no
    earlier answer in the KV cache), and scored from the logits of a batch evaluation of the
    whole prompt (as the first answer to a new prompt is drawn)."""
    llama = model.llama
    model.distributions.clear()
    llama.reset()
    fresh = asyncio.run(model.complete(request)).option_probabilities or {}
    worst = max(abs(fresh.get(option, 0.0) - probability) for option, probability in stored.items())
    print(f"rescored in a fresh context: largest difference {worst:.2e}")
    tokens = llama.input_ids[:llama.n_tokens].tolist()
    prompt = tokens[:len(tokens)]
    llama.reset()
    llama.eval(prompt[:-1])
    single = llama.scores[llama.n_tokens - 1].copy() if llama.context_params.logits_all else None
    llama.reset()
    llama.eval(prompt)
    batch_logits = llama.eval_logits[-1] if llama.eval_logits else None
    print(f"batch-evaluated last position available: {batch_logits is not None}; single: {single is not None}")


if __name__ == "__main__":
    sys.exit(main())
