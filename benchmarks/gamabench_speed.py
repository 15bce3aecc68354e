"""GAMA-Bench's own runner beside agentsim on one game, against the same neutral
OpenAI-compatible server: the wall-time ratio.

    python benchmarks/gamabench_speed.py --gamabench PATH/TO/GAMABench [--venv DIR]

The server (started here, in its own process, on 127.0.0.1) answers every chat completion
after `--latency` seconds (default 0.1) with `{"chosen_number": "N"}`, N from a checksum of the
messages: a reply both runners read, the same rule for both, no game logic. Each side plays
Guess 2/3 of the Average, 10 players x 20 rounds x 5 runs (`--players`, `--rounds`, `--runs`):

- GAMA-Bench: its own `GuessingGame(...).run(rounds)` from a copy of the checkout (nothing of
  it is kept or committed here), in a throwaway virtual environment holding only what its
  modules import (openai, tenacity, google-generativeai, matplotlib, numpy, pandas, tqdm;
  created with pip unless `--venv` names one), its `utils.py` written with empty keys and no
  delay, the OpenAI SDK pointed at the server by OPENAI_BASE_URL. Its runner asks one player
  at a time and pauses 1 s after each round (`time.sleep(1)` in its server): both figures are
  printed, as run and less those pauses.
- agentsim: `python -m agentsim scenarios/gamabench/guessing_game.py --backend
  openai:gpt-3.5-turbo@URL --runs 5 --no-cache`.

Wall times include each side's interpreter start-up. Prints both, the server's request counts
and the ratio (GAMA-Bench / agentsim).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NEEDS = ("openai", "tenacity", "google-generativeai", "matplotlib", "numpy", "pandas", "tqdm")
UTILS = 'openai_api_key = "sk-bench"\ninfradeep_api_key = "sk-bench"\ngoogle_api_key = "bench"\ntemperature = 1\ndelay_time = 0\n'
DRIVER = """import sys
from games.guessing_game import GuessingGame
players, rounds, runs = map(int, sys.argv[1:4])
for run in range(runs):
    GuessingGame(player_num=players, version="v1", models="gpt-3.5-turbo", name_exp=f"bench_{run}").run(rounds)
"""


async def serve(latency: float) -> None:
    """The neutral server: prints its port, then answers until killed."""
    from aiohttp import web

    count = 0

    async def chat(request: web.Request) -> web.Response:
        nonlocal count
        count += 1
        body = await request.json()
        await asyncio.sleep(latency)
        number = zlib.crc32(json.dumps(body["messages"]).encode()) % 67
        return web.json_response({"id": f"bench-{count}", "object": "chat.completion", "created": 0,
                                  "model": body.get("model", "bench"),
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": f'{{"chosen_number": "{number}"}}'}}],
                                  "usage": {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108}})

    async def stats(request: web.Request) -> web.Response:
        return web.json_response({"requests": count})

    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/stats", stats)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
    await asyncio.Event().wait()


def requests_so_far(url: str) -> int:
    from urllib.request import urlopen

    with urlopen(f"{url}/stats", timeout=10) as answer:
        return int(json.loads(answer.read())["requests"])


def gamabench_python(options: argparse.Namespace, scratch: Path) -> Path:
    if options.venv:
        return Path(options.venv) / "bin" / "python"
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *NEEDS], check=True)
    return venv / "bin" / "python"


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode:
        sys.exit(f"{' '.join(command[:3])} failed:\n{result.stderr[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gamabench", type=Path, help="a GAMA-Bench checkout (its games/, server.py, prompt_template/)")
    parser.add_argument("--venv", help="a virtual environment with GAMA-Bench's imports (default: a throwaway one)")
    parser.add_argument("--players", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.1, help="the server's seconds per call")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        asyncio.run(serve(options.latency))
        return 0
    if options.gamabench is None or not (options.gamabench / "games" / "guessing_game.py").is_file():
        sys.exit("--gamabench must name a GAMA-Bench checkout (games/guessing_game.py)")
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--latency", str(options.latency)],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}"  # type: ignore[union-attr]
        with tempfile.TemporaryDirectory() as name:
            scratch = Path(name)
            python = gamabench_python(options, scratch)
            copy = scratch / "gamabench"
            shutil.copytree(options.gamabench, copy, ignore=shutil.ignore_patterns("raw_results", ".git"))
            (copy / "utils.py").write_text(UTILS)
            (copy / "bench_driver.py").write_text(DRIVER)
            env = os.environ | {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-bench", "MPLBACKEND": "Agg"}
            counts = (options.players, options.rounds, options.runs)
            before = requests_so_far(url)
            theirs = timed([str(python), "bench_driver.py", *map(str, counts)], copy, env)
            their_calls = requests_so_far(url) - before
            ours = timed([sys.executable, "-m", "agentsim", str(ROOT / "scenarios" / "gamabench" / "guessing_game.py"),
                          "--backend", f"openai:gpt-3.5-turbo@{url}/v1", "--runs", str(options.runs), "--no-cache",
                          "--set", f"agents={options.players}", "--set", f"max_rounds={options.rounds}",
                          "--out", str(scratch / "agentsim")], ROOT, env | {"PYTHONPATH": str(ROOT)})
            our_calls = requests_so_far(url) - before - their_calls
    finally:
        server.terminate()
        server.wait(10)
    pauses = options.rounds * options.runs * 1.0
    print(f"Guess 2/3 of the Average, {options.players} players x {options.rounds} rounds x {options.runs} runs, "
          f"a neutral server at {options.latency * 1000:.0f} ms per call")
    print(f"GAMA-Bench's runner: {theirs:8.1f} s ({their_calls} calls), {theirs - pauses:8.1f} s less its 1 s pause per round")
    print(f"agentsim:            {ours:8.1f} s ({our_calls} calls)")
    print(f"wall-time ratio (GAMA-Bench / agentsim): {theirs / ours:.1f}x as run, {(theirs - pauses) / ours:.1f}x less the pauses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
