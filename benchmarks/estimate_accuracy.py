"""How close `python -m agentsim estimate` comes to the bill: six scenarios (the naming game,
SIGN, a GovSim month, the Donor game, a GAMA-Bench game, a layer game) on one OpenAI and one
Anthropic model, estimate / actual for calls, tokens and cost, prompt caching included.

Each scenario is recorded once on the in-process stand-in; `estimate` then plays it on the
stand-in again and prices it for the model (tiers, the provider's prompt cache played call by
call); the actual figures are the bill of the same run replayed over HTTP through the
provider's route against the stand-in server (backends/standin_server.py), which answers with
the recorded replies, caches prompts as the provider does (Anthropic's breakpoints at the
model's minimum cacheable prefix, OpenAI's automatic prefix cache) and bills each request with
genai-prices' `calc_price` of the usage it reports. Prints, per scenario and model, the actual
calls, tokens (prompt + reply), cached and written prompt tokens and cost, and the ratios
estimate / actual (goal: within 10%) and to-the-end / actual for the cost (goal: never below 1).

    python benchmarks/estimate_accuracy.py [--openai-model gpt-4o] [--anthropic-model claude-sonnet-4-5]
                                           [--only naming,guessing]

Asserts nothing: it prints figures. The replies are the stand-in's, replayed: the figures are
agentsim's prompts and its pricing, not a model's behaviour.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "backends"))

from standin_server import ServerConfig, StandInServer, replies_from_run  # noqa: E402 (after the sys.path line)

from agentsim.configure import ExperimentOptions  # noqa: E402
from agentsim.estimate import estimate  # noqa: E402
from agentsim.scenario_files import load_scenario  # noqa: E402

# SIGN's scenario file is a grid of conditions: one cell of it, as a file of its own
SIGN = ("from agentsim.games.sign import SignGame\n"
        "scenario = SignGame(agents=12, lexicon_size=12, memory_length=5, alpha=0.75, max_rounds=20)\n")
# name -> (scenario file, settings): each small enough to run in seconds, long enough to cache
SCENARIOS = {
    "naming": ("scenarios/naming_game.py", {"agents": "12", "max_rounds": "10"}),
    "sign": ("sign_cell.py", {}),
    "govsim": ("scenarios/commons_fishing.py", {"months": "2"}),
    "donor": ("scenarios/donor_game.py", {"generations": "2"}),
    "guessing": ("scenarios/gamabench/guessing_game.py", {"max_rounds": "20"}),
    "public_goods": ("scenarios/public_goods.py", {"agents": "8", "max_rounds": "10"}),
}


def agentsim(*arguments: str) -> None:
    environment = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   "ANTHROPIC_API_KEY": "benchmark-key", "OPENAI_API_KEY": "benchmark-key"}
    done = subprocess.run([sys.executable, "-m", "agentsim", *arguments, "--no-live"], capture_output=True, text=True,
                          env=environment, check=False)
    if done.returncode != 0:
        raise SystemExit(f"agentsim {' '.join(arguments)} exited {done.returncode}: {done.stderr.strip()[-400:]}")


def billed(replies: dict[str, list[str]], arguments: list[str], backend: str, chars_per_token: float) -> dict[str, float]:
    """The bill of the recorded run replayed over HTTP through `backend`'s route."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    server = StandInServer(ServerConfig(replies={key: list(queue) for key, queue in replies.items()}, capacity=64,
                                        chars_per_token=chars_per_token))
    url = asyncio.run_coroutine_threadsafe(server.start(), loop).result(30)
    try:
        with tempfile.TemporaryDirectory() as out:
            route = f"{backend}@{url}/v1" if backend.startswith("openai:") else f"{backend}@{url}"
            agentsim(*arguments, "--backend", route, "--no-cache", "--no-probe", "--out", out)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
    bills = server.stats.bills
    return {"calls": len(bills), "tokens": sum(bill["input_tokens"] + bill["output_tokens"] for bill in bills),
            "cached": sum(bill["cache_read_tokens"] for bill in bills),
            "written": sum(bill["cache_write_tokens"] for bill in bills), "cost": sum(bill["usd"] for bill in bills)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--openai-model", default="gpt-4o")
    parser.add_argument("--anthropic-model", default="claude-sonnet-4-5")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="which scenarios, comma-separated")
    parser.add_argument("--provider-chars-per-token", type=float, default=4.0,
                        help="the characters a token of the server's tokenizer (4: the estimate's own count, with no "
                             "tokenizer of a hosted model offline; 3.6: about OpenAI's o200k on these prompts)")
    options = parser.parse_args()
    backends = [f"openai:{options.openai_model}", f"anthropic:{options.anthropic_model}"]
    print(f"provider's tokenizer: {options.provider_chars_per_token:g} characters a token; the estimate's: 4 (no "
          f"hosted model's tokenizer offline)")
    print(f"{'scenario':<13} {'backend':<28} {'calls':>6} {'tokens':>9} {'cached':>8} {'written':>8} {'cost $':>9}  "
          f"{'calls':>6} {'tokens':>6} {'cached':>6} {'cost':>6} {'to end':>6}   (actual; then estimate / actual)")
    worst = 0.0
    lowest_bound = float("inf")
    started = time.perf_counter()
    cell = Path(tempfile.mkdtemp(prefix="agentsim-benchmark-")) / "sign_cell.py"
    cell.write_text(SIGN, encoding="utf-8")
    for name in options.only.split(","):
        file, settings = SCENARIOS[name]
        path = str(cell if file == cell.name else ROOT / file)
        arguments = [path, "--runs", "1", "--seed", "0", *(part for key, value in settings.items()
                                                           for part in ("--set", f"{key}={value}"))]
        scenario, _ = load_scenario(path)
        with tempfile.TemporaryDirectory() as work:
            recorded = Path(work) / "recorded"
            agentsim(*arguments, "--out", str(recorded))
            replies = replies_from_run(recorded, scenario.with_overrides(settings).for_experiment(0))
        for backend in backends:
            found = estimate(ExperimentOptions(scenario=path, backend=backend, runs=1, seed=0, overrides=settings))
            actual = billed(replies, arguments, backend, options.provider_chars_per_token)
            totals = found.totals()
            cost, upper = found.cost() or 0.0, found.cost(upper=True) or 0.0
            ratios = (totals.calls / actual["calls"], (totals.prompt_tokens + totals.completion_tokens) / actual["tokens"],
                      cost / actual["cost"] if actual["cost"] else float("nan"))
            bound = upper / actual["cost"] if actual["cost"] else float("nan")
            worst = max(worst, *(abs(ratio - 1) for ratio in ratios))
            lowest_bound = min(lowest_bound, bound)
            cached = f"{totals.cached_prompt_tokens / actual['cached']:>6.3f}" if actual["cached"] else f"{'-':>6}"
            print(f"{name:<13} {backend:<28} {actual['calls']:>6} {actual['tokens']:>9} {actual['cached']:>8} "
                  f"{actual['written']:>8} {actual['cost']:>9.4f}  {ratios[0]:>6.3f} {ratios[1]:>6.3f} {cached} "
                  f"{ratios[2]:>6.3f} {bound:>6.2f}")
    print(f"worst estimate / actual off by {worst:.1%} (goal: within 10%); lowest to-the-end / actual {lowest_bound:.2f} "
          f"(goal: at least 1); {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


