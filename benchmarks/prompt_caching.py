"""What prompt caching changes on a hosted model's bill: a GovSim fishing run (12 months, 5
fishers) priced as Anthropic and OpenAI bill it, with and without Anthropic's breakpoints.

The run is recorded once on the in-process stand-in; the stand-in server is then given its
prompts and replies (`replies_from_run`) and plays it again over HTTP through each provider's
route, caching prompts and reporting usage as each provider does (Anthropic: a `cache_control`
prefix of at least --cache-min-tokens written once, then read; OpenAI: any prompt prefix of
1,024 tokens or more seen before). agentsim reads the cached and written tokens and prices
them at the model's prices from genai-prices. Prints, per route, the calls, input tokens
(fresh, cached, written), the billed input cost and the total cost.

    python benchmarks/prompt_caching.py [--months 12] [--scenario scenarios/commons_fishing.py]
                                        [--anthropic-model claude-3-5-sonnet-latest] [--openai-model gpt-4o-mini]

Asserts nothing: it prints figures. Each run plays the recorded stand-in's replies: the
figures are agentsim's prompts, priced, not a model's behaviour.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "backends"))

from standin_server import ServerConfig, StandInServer, replies_from_run  # noqa: E402 (after the sys.path line)

from agentsim.llm.prices import price_for  # noqa: E402 (after the sys.path line)
from agentsim.scenario_files import load_scenario  # noqa: E402 (after the sys.path line)


def agentsim(*arguments: str) -> None:
    environment = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   "ANTHROPIC_API_KEY": "benchmark-key", "OPENAI_API_KEY": "benchmark-key"}
    done = subprocess.run([sys.executable, "-m", "agentsim", *arguments, "--no-live"], capture_output=True, text=True,
                          env=environment, check=False)
    if done.returncode != 0:
        raise SystemExit(f"agentsim {' '.join(arguments)} exited {done.returncode}: {done.stderr.strip()[-400:]}")


def served(replies: dict[str, str], cache_min_tokens: int) -> tuple[StandInServer, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    fresh = {key: list(queue) for key, queue in replies.items()}  # a run consumes the replies of a repeated prompt
    server = StandInServer(ServerConfig(replies=fresh, capacity=64, cache_min_tokens=cache_min_tokens))
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(30)
    return server, loop


def usage(directory: Path) -> dict[str, Any]:
    summary = json.loads((directory / "summary.json").read_text())
    return next(iter(summary["usage_by_backend"].values()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "commons_fishing.py"))
    parser.add_argument("--months", type=int, default=12, help="the commons' months (scenarios without months: ignored)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="another scenario's parameters (e.g. --scenario scenarios/gamabench/guessing_game.py "
                             "--set max_rounds=20)")
    parser.add_argument("--anthropic-model", default="claude-3-5-sonnet-latest")
    parser.add_argument("--openai-model", default="gpt-4o-mini")
    parser.add_argument("--cache-min-tokens", type=int, default=1024,
                        help="the shortest prefix the emulated Anthropic caches (Sonnet's: 1,024; Haiku's: 2,048)")
    options = parser.parse_args()
    scenario, _ = load_scenario(options.scenario)
    overrides = dict(item.split("=", 1) for item in options.overrides)
    if "months" in scenario.params.field_names():
        overrides.setdefault("months", str(options.months))
    common = ["--runs", "1", "--seed", "0", *(argument for key, value in overrides.items()
                                               for argument in ("--set", f"{key}={value}"))]
    with tempfile.TemporaryDirectory() as work:
        recorded = Path(work) / "recorded"
        agentsim(options.scenario, *common, "--out", str(recorded))
        replies = replies_from_run(recorded, scenario.with_overrides(overrides).for_experiment(0))
        settings = ", ".join(f"{key}={value}" for key, value in overrides.items()) or "defaults"
        print(f"{options.scenario} ({settings}, 1 run, seed 0): {len(replies)} distinct prompts recorded on the "
              f"stand-in, replayed over HTTP")
        print(f"{'route':<44} {'calls':>6} {'input tok':>10} {'cached':>9} {'written':>9} {'input $':>9} {'total $':>9}")
        routes = [("anthropic, breakpoints", f"anthropic:{options.anthropic_model}", []),
                  ("anthropic, --no-cache-breakpoints", f"anthropic:{options.anthropic_model}", ["--no-cache-breakpoints"]),
                  ("openai (automatic prefix cache)", f"openai:{options.openai_model}", [])]
        for label, backend, flags in routes:
            server, loop = served(replies, options.cache_min_tokens)
            out = Path(work) / label.replace(" ", "_").replace(",", "")
            try:
                agentsim(options.scenario, *common, "--backend", backend, "--base-url", server.url + "/v1"
                         if backend.startswith("openai") else server.url, "--no-cache", "--no-probe", *flags,
                         "--out", str(out))
            finally:
                asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
                loop.call_soon_threadsafe(loop.stop)
            counted = usage(out)
            price = price_for(backend.partition(":")[2])
            assert price is not None
            cached, written = counted["cached_prompt_tokens"], counted["cache_write_tokens"]
            input_cost = price.cost(counted["prompt_tokens"], 0, cached_tokens=cached, cache_write_tokens=written)
            print(f"{label + ' (' + backend + ')':<44} {counted['calls']:>6} {counted['prompt_tokens']:>10} {cached:>9} "
                  f"{written:>9} {input_cost:>9.4f} {counted['cost_usd']:>9.4f}")
        print(f"prices: {options.anthropic_model} {price_for(options.anthropic_model)}; "
              f"{options.openai_model} {price_for(options.openai_model)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
