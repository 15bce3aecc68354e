"""GAMA-Bench's published leaderboard beside `python -m agentsim score` of its published runs.

    python benchmarks/gamabench_leaderboard.py --gamabench PATH/TO/GAMABench

reads PATH's raw_results/ with `python -m agentsim import gamabench` into a temporary results
directory, scores it (`python -m agentsim score`: version v1, the five replicate runs of each
model and game, as the leaderboard) and prints, for every model and game of PATH's
leadboard.md (or README.md), the published score, agentsim's and the difference, flagging any
over 0.1. Nothing of GAMA-Bench is kept: its files are read from the user's checkout.
Not a test: a check to run against a fetched copy (docs/reproducing-gamabench.md).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from statistics import mean

from agentsim.analysis.recorded import find_experiments
from agentsim.games.gamabench.importer import import_runs
from agentsim.games.gamabench.scores import gamabench_experiments, run_scores

# The leaderboard's columns, and the game agentsim's `score` names for each.
COLUMNS = {"Guessing": "guessing_game", "Bar": "bar_game_implicit", "Dollar": "divide_dollar", "Goods": "public_goods",
           "Diner": "diner_dilemma", "Auction": "sealed_bid_auction_first_price", "Battle": "battle_royale",
           "Pirate": "pirate_game"}
# The leaderboard's model names, and the names GAMA-Bench's raw_results give them (file-name
# prefixes; its default model's files carry none, and their players say gpt-3.5-turbo or -0125).
MODELS = {"Gemini-1.5-Pro": ("gemini-1.5-pro",), "GPT-4o-0806": ("gpt-4o",), "LLaMA-3.1-70B": ("llama-3.1-70b",),
          "GPT-4t-0125": ("gpt-4-0125-preview",), "Mixtral-8x22B": ("mixtral-8x22b",),
          "LLaMA-3.1-405B": ("llama-3.1-405b",), "Qwen-2-72B": ("qwen2-72b",), "LLaMA-3.1-8B": ("llama-3.1-8b",),
          "Gemini-1.0-Pro": ("gemini-1.0-pro",), "GPT-3.5-1106": ("gpt-3.5-turbo-1106",),
          "GPT-3.5-0125": ("gpt-3.5-turbo", "gpt-3.5-turbo-0125"), "Mixtral-8x7B": ("mixtral-8x7b",),
          "GPT-3.5-0613": ("gpt-3.5-turbo-0613",)}
TOLERANCE = 0.1


def published(path: Path) -> dict[str, dict[str, float]]:
    """The leaderboard table of a markdown file: model -> column -> score."""
    rows = [line.strip().strip("|").split("|") for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip().startswith("|")]
    header = [cell.strip() for cell in rows[0]]
    table = {}
    for cells in rows[1:]:
        name = re.sub(r"[^\w.\-]", "", cells[0].replace("**", "")).strip()
        if not name or set(cells[1].strip()) <= set(":-"):
            continue
        table[name.removeprefix("_")] = {header[index]: float(cell) for index, cell in enumerate(cells) if index and cell.strip()}
    return table


def agentsim_scores(raw_results: Path, out: Path) -> dict[tuple[str, str], list[float]]:
    """(model, game) -> the run scores of version v1's replicate runs."""
    import_runs(raw_results, out)
    scores: dict[tuple[str, str], list[float]] = {}
    for experiment in gamabench_experiments(find_experiments(out)):
        for entry in run_scores(experiment):
            if entry.version == "v1" and entry.condition == "":
                scores.setdefault((entry.model, entry.game), []).append(entry.score)
        experiment.close()
    return scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gamabench", type=Path, required=True, help="a GAMA-Bench checkout (raw_results/, leadboard.md)")
    options = parser.parse_args()
    board_file = next((options.gamabench / name for name in ("leadboard.md", "README.md")
                       if (options.gamabench / name).is_file()), None)
    if board_file is None or not (options.gamabench / "raw_results").is_dir():
        sys.exit(f"{options.gamabench} holds no raw_results/ and leadboard.md: give a GAMA-Bench checkout")
    board = published(board_file)
    with tempfile.TemporaryDirectory() as scratch:
        scores = agentsim_scores(options.gamabench / "raw_results", Path(scratch) / "imported")
    print(f"{'model':<16}{'game':<10}{'published':>10}{'agentsim':>10}{'diff':>7}  runs")
    worst, over = 0.0, []
    for model, names in MODELS.items():
        row = board.get(model)
        if row is None:
            continue
        means = []
        for column, game in COLUMNS.items():
            runs = [score for name in names for score in scores.get((name, game), [])]
            if not runs:
                print(f"{model:<16}{column:<10}{row[column]:>10.1f}{'-':>10}{'':>7}  0 (no runs imported)")
                continue
            value = mean(runs)
            means.append(value)
            diff = round(value, 1) - row[column]
            worst = max(worst, abs(diff))
            flag = "  <-- over 0.1" if abs(diff) > TOLERANCE + 1e-9 else ""
            over += [f"{model} {column}"] if flag else []
            print(f"{model:<16}{column:<10}{row[column]:>10.1f}{value:>10.2f}{diff:>+7.1f}  {len(runs)}{flag}")
        if len(means) == len(COLUMNS):
            overall = mean(means)
            diff = round(overall, 1) - row["Overall"]
            worst = max(worst, abs(diff))
            print(f"{model:<16}{'Overall':<10}{row['Overall']:>10.1f}{overall:>10.2f}{diff:>+7.1f}")
    print(f"largest difference after rounding to 0.1: {worst:.1f}; over {TOLERANCE}: {', '.join(over) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
