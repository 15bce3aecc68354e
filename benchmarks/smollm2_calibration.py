"""The constrained harvest's stored distribution against SmolLM2's own answers over many seeds
(GovSim on the laptop model; tests/test_smollm2_commons.py is the 20-seed check).

    python benchmarks/smollm2_calibration.py [--seeds 1000] [--stock 80] [--temperature 0.7] [--diagnose DRAWS]

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
    parser.add_argument("--fresh", action="store_true",
                        help="answer each seed in a fresh context (the prompt evaluated anew; nothing of the last "
                             "answer or of the scoring left in the KV cache)")
    parser.add_argument("--diagnose", type=int, default=0, metavar="DRAWS",
                        help="also take a miscalibration apart, with this many one-token draws")
    parser.add_argument("--depth", type=int, default=0,
                        help="with --diagnose: the exact distribution of the first DEPTH tokens' text against as many "
                             "draws of DEPTH tokens (where along the reply the sampler and the scoring part)")
    options = parser.parse_args()
    game = CommonsGame(agents=3, constrained_decoding=True, temperature=options.temperature)
    situation = harvest(options.stock)
    sampling, grammar = game.params.sampling(), game.codec.grammar(situation)
    model = LlamaCppModel(name="local:smollm2", path="smollm2", threads=1)
    requests = [Request(messages=game.codec.messages(situation), sampling=sampling, seed=seed, options=situation.options,
                        grammar=grammar) for seed in range(options.first_seed, options.first_seed + options.seeds)]
    started = time.perf_counter()

    async def ask() -> list[Completion]:
        answers = []
        for request in requests:
            if options.fresh:
                model.llama.reset()
            answers.append(await model.complete(request))
        return answers

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
        diagnose(model, requests[0], options.diagnose)
        if options.depth:
            prefixes(model, requests[0], options.diagnose, options.depth)
    asyncio.run(model.aclose())
    return 0


def diagnose(model: LlamaCppModel, request: Request, seeds: int) -> None:
    """Where a miscalibration comes from. (1) The prompt's last position evaluated with the
    prompt as one batch (as the first answer to a new prompt is drawn) against the same position
    evaluated alone after the rest (as later answers to the same prompt and the scoring read it):
    the largest difference of their logits. (2) The first token alone: its exact distribution
    under the grammar and the temperature from those logits, against the first tokens the sampler
    draws over the seeds (one-token answers): a chi-square test. A difference at (1) is the KV
    cache and its reuse; at (2), with (1) equal, the sampler. (1b) The reply's tokens evaluated in
    one batch against one at a time: llama.cpp's CPU kernels give a batch of several tokens other
    logits (SmolLM2's Q4_1 weights: up to 0.8), so the scoring and (3) evaluate them one at a
    time, as the sampler does."""
    import numpy as np

    from agentsim.llm.scoring import sampler_probabilities

    llama, bindings = model.llama, model.bindings
    first = asyncio.run(model.complete(request))
    prompt = list(llama.input_ids[:first.prompt_tokens])
    vocabulary = llama.n_vocab()

    def logits() -> np.ndarray:
        return np.array(np.ctypeslib.as_array(bindings.llama_get_logits_ith(llama.ctx, -1), shape=(vocabulary,)))

    llama.reset()
    llama.eval(prompt)
    batch = logits()
    llama.reset()
    llama.eval(prompt[:-1])
    llama.eval(prompt[-1:])
    alone = logits()
    print(f"(1) last position's logits, one batch against alone: largest difference {np.max(np.abs(batch - alone)):.3e}")
    reply = [int(token) for token in llama.tokenize(first.text.encode(), add_bos=False, special=False)]
    llama.n_tokens = len(prompt) - 1
    llama.eval(prompt[-1:] + reply)
    together = logits()
    llama.n_tokens = len(prompt) - 1
    for token in prompt[-1:] + reply:
        llama.eval([token])
    print(f"(1b) after the reply {first.text!r}: its tokens evaluated in one batch against one at a time (as the "
          f"sampler does): largest difference {np.max(np.abs(together - logits())):.3e}")
    assert request.grammar is not None
    table = model._table()
    replies = {reply.encode(): option for reply, option in request.grammar.choices}
    candidates, _ = table.allowed(replies, b"")
    tokens = [token for token, _ in candidates]
    for name, values in (("alone", alone), ("batch", batch)):
        chances = sampler_probabilities(values[tokens], temperature=request.sampling.temperature,
                                        top_k=request.sampling.top_k, top_p=request.sampling.top_p)
        one_token = dataclasses.replace(request.sampling, max_tokens=1)
        drawn: Counter[str] = Counter()
        if name == "alone":
            for seed in range(seeds):
                reply = asyncio.run(model.complete(dataclasses.replace(request, sampling=one_token, seed=seed)))
                drawn[reply.text] += 1
            pieces = {table.piece(token).decode(errors="replace"): chance for token, chance in zip(tokens, chances)}
            observed = [drawn.get(piece, 0) for piece in pieces]
            expected = [chance * seeds for chance in pieces.values()]
            kept = [(o, e) for o, e in zip(observed, expected) if e >= 5]
            rest = (sum(observed) - sum(o for o, _ in kept), seeds - sum(e for _, e in kept))
            test = stats.chisquare([o for o, _ in kept] + [rest[0]], [e for _, e in kept] + [rest[1]])
            print(f"(2) first tokens drawn over {seeds} seeds against their exact distribution: chi-square p = "
                  f"{test.pvalue:.3f}")
            for piece, chance in sorted(pieces.items(), key=lambda item: -item[1])[:6]:
                print(f"    {piece!r}: exact {chance:.4f}, expected {chance * seeds:6.1f}, drawn {drawn.get(piece, 0)}")
        else:
            top = sorted(zip(tokens, chances), key=lambda item: -item[1])[:3]
            print("    from the batch logits instead: " + ", ".join(
                f"{table.piece(token).decode(errors='replace')!r} {chance:.4f}" for token, chance in top))


def prefixes(model: LlamaCppModel, request: Request, draws: int, depth: int) -> None:
    """The exact distribution of the text of the reply's first `depth` tokens (the sampler's
    chain over the grammar's allowed tokens, from logits evaluated one token at a time after the
    prompt, as the scoring reads them) against `draws` replies cut at `depth` tokens."""
    import numpy as np

    from agentsim.llm.scoring import sampler_probabilities

    llama, bindings, table = model.llama, model.bindings, model._table()
    first = asyncio.run(model.complete(request))
    prompt = [int(token) for token in llama.input_ids[:first.prompt_tokens]]
    vocabulary = llama.n_vocab()
    assert request.grammar is not None
    replies = {reply.encode(): option for reply, option in request.grammar.choices}
    sampling = request.sampling

    def logits(path: tuple[int, ...]) -> np.ndarray:  # one token at a time, as the sampler evaluates them
        llama.n_tokens = len(prompt) - 1
        for token in prompt[-1:] + list(path):
            llama.eval([token])
        return np.array(np.ctypeslib.as_array(bindings.llama_get_logits_ith(llama.ctx, -1), shape=(vocabulary,)))

    exact: Counter[bytes] = Counter()
    stack: list[tuple[tuple[int, ...], bytes, float]] = [((), b"", 1.0)]
    while stack:
        path, written, chance = stack.pop()
        candidates, ends = table.allowed(replies, written)
        tokens = [token for token, _ in candidates] + ends
        if len(path) == depth or not tokens:
            exact[written] += chance
            continue
        chances = sampler_probabilities(logits(path)[tokens], temperature=sampling.temperature, top_k=sampling.top_k,
                                        top_p=sampling.top_p)
        for (token, piece), share in zip(candidates, chances):
            if share * chance > 1e-6:
                stack.append((path + (token,), written + piece, chance * share))
        if ends:
            exact[written] += chance * float(chances[len(candidates):].sum())
    cut = dataclasses.replace(request.sampling, max_tokens=depth)
    drawn: Counter[bytes] = Counter()
    for seed in range(draws):
        drawn[asyncio.run(model.complete(dataclasses.replace(request, sampling=cut, seed=seed))).text.encode()] += 1
    kept = [(text, share) for text, share in exact.items() if share * draws >= 5]
    observed = [drawn.get(text, 0) for text, _ in kept] + [draws - sum(drawn.get(text, 0) for text, _ in kept)]
    expected = [share * draws for _, share in kept] + [draws * (1 - sum(share for _, share in kept))]
    test = stats.chisquare(observed, [value * sum(observed) / sum(expected) for value in expected])
    print(f"(3) the first {depth} tokens' text over {draws} draws against its exact distribution: chi-square p = "
          f"{test.pvalue:.3f}")
    for text, share in sorted(kept, key=lambda item: -item[1])[:8]:
        print(f"    {text.decode(errors='replace')!r}: exact {share:.4f}, expected {share * draws:6.1f}, "
              f"drawn {drawn.get(text, 0)}")


if __name__ == "__main__":
    sys.exit(main())
