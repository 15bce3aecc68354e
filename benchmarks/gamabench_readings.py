"""A reading audit: agentsim's default readers (the game layer's, as the scenario files of
scenarios/gamabench/ ask) over every reply GAMA-Bench published, against what GAMA-Bench's
runner read from it.

    python benchmarks/gamabench_readings.py --gamabench PATH/TO/GAMABench

A raw_results file keeps no reply as the model wrote it: it keeps what the runner read (each
player's `records`, a round's `responses`) and, in each player's conversation, the reply as the
runner's report writes it back (the report's assistant turn, `{"chosen_number": "33"}`). This
reads every such turn the files keep with the reader agentsim's own mode uses for that game and
move (`Number(0, 100)`, `Options("cheap", "costly")`, ...) and counts the replies where it reads
the value the runner recorded, those where it reads another, and those it would ask again (its
reason). It prints the agreement overall and per game and each kind of disagreement. Nothing of
GAMA-Bench is kept. Not a test: a check to run against a fetched copy (docs/reproducing-gamabench.md).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from agentsim.gamekit import Number, Options, Split
from agentsim.gamekit.choices import Choice

MARK = {"mean_ratio": "guessing_game", "go_num": "bar_game", "total_proposal": "divide_dollar",
        "total_tokens": "public_goods", "cheap_player": "diner_dilemma", "valuations": "sealed_bid_auction",
        "player_shooting": "battle_royale", "gold_distribution": "pirate_game"}


def default_reader(game: str, meta: dict[str, Any], record: dict[str, Any], player: int, move: str) -> Choice:
    """The reader agentsim's own scenario file uses for this ask (scenarios/gamabench/*.py)."""
    if game == "guessing_game":
        return Number(int(meta.get("min", 0)), int(meta.get("max", 100)))
    if game == "bar_game":
        return Options("go", "stay")
    if game == "divide_dollar":
        return Number(0, int(meta.get("golds", 100)))
    if game == "public_goods":
        return Number(0, int(meta.get("tokens", 20)))
    if game == "diner_dilemma":
        return Options("cheap", "costly")
    if game == "sealed_bid_auction":
        return Number(0, int(meta.get("valuation_max", 200)))
    if game == "battle_royale":
        alive = [name for name, _ in record["initial_players"] if name != f"player_{record['player_shooting']}"]
        return Options(*alive, "nobody")
    if move == "propose":
        return Split(len(record["gold_distribution"]), int(meta.get("gold", 100)))
    return Options("accept", "reject")


def replies(document: dict[str, Any]) -> list[tuple[int, int, str, str, Any]]:
    """(round, player, move, reply as kept, value the runner read) for every reply a file keeps."""
    records = document["round_records"]
    game = next(game for mark, game in MARK.items() if mark in records[0])
    found = []
    for index, player in enumerate(document.get("player_data") or []):
        kept = [_text(message) for message in player.get("prompt") or []
                if isinstance(message, dict) and message.get("role") in ("assistant", "model")]
        rounds = _rounds(game, records, index)
        kept = kept[-len(rounds):] if len(kept) < len(rounds) else kept  # the oldest may have been dropped
        for number, text in zip(rounds[len(rounds) - len(kept):], kept):
            record = records[number - 1]
            if game == "battle_royale":
                value: Any = record["responses"][0]
            elif game == "pirate_game":
                value = record["responses"][index - (number - 1)]
            else:
                own = player.get("records") or []
                value = own[number - 1] if len(own) == len(records) else None
            if value is not None:
                found.append((number, index, "vote" if game == "pirate_game" else "choose", text, value))
        if game == "pirate_game":  # a proposal is kept only as its reports print it
            for number, record in enumerate(records, start=1):
                if index == number - 1:
                    plan = _plan(player.get("prompt") or [], record["gold_distribution"])
                    if plan is not None:
                        found.append((number, index, "propose", plan, record["gold_distribution"]))
    return found


def _text(message: dict[str, Any]) -> str:
    content = message.get("content", message.get("parts"))
    return " ".join(map(str, content)) if isinstance(content, list) else str(content)


def _rounds(game: str, records: list[dict[str, Any]], player: int) -> list[int]:
    """The rounds in which `player` answered (and so got a report with its answer back)."""
    if game == "battle_royale":
        return [number for number, record in enumerate(records, start=1) if str(record["player_shooting"]) == str(player)]
    if game == "pirate_game":
        return [number for number, record in enumerate(records, start=1) if number - 1 <= player < number - 1 +
                len(record["responses"])]
    return list(range(1, len(records) + 1))


def _plan(prompt: list[Any], shares: list[int]) -> str | None:
    for message in prompt:
        for found in re.finditer(r"\{'[^{}]*\}", _text(message) if isinstance(message, dict) else ""):
            return found.group()
    return None


def audit(raw_results: Path) -> tuple[Counter[str], dict[str, Counter[str]]]:
    agreement: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: Counter[str] = Counter()
    for path in sorted(raw_results.rglob("*.json")):
        document = json.loads(path.read_bytes())
        records = document["round_records"]
        game = next(game for mark, game in MARK.items() if mark in records[0])
        for number, player, move, text, value in replies(document):
            reader = default_reader(game, document["meta"], records[number - 1], player, move)
            action, problem = reader.read(text)
            expected = _expected(game, move, value)
            if action == expected:
                agreement[game]["agree"] += 1
                continue
            agreement[game]["disagree"] += 1
            if "jailbreak" in path.stem:
                kinds[f"{game}: a jailbreak run's reply, written in a cipher (its decoding is not in GAMA-Bench's code)"] += 1
                continue
            shown = re.sub(r"-?\d+(\.\d+)?", "N", problem) if problem else f"reads another value ({_kind(action, expected)})"
            kinds[f"{game} {move}: {shown}" + (f" [GAMA-Bench read {_class(value)}]" if problem else "")] += 1
    return kinds, agreement


def _expected(game: str, move: str, value: Any) -> str:
    if game == "battle_royale":
        return "nobody" if str(value) in ("null", "None") else f"player_{value}"
    if move == "propose":
        return ",".join(str(int(share)) for share in value)
    return str(value)


def _kind(action: str | None, expected: str) -> str:
    return f"{action!r} for {expected!r}" if len(f"{action}{expected}") < 40 else "a different value"


def _class(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a negative number" if value < 0 else "a number"
    if isinstance(value, list):
        return "a plan"
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return "a number in a text (a player's number)"
    return repr(value) if len(str(value)) < 20 else "a text"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gamabench", type=Path, required=True, help="a GAMA-Bench checkout (its raw_results/)")
    options = parser.parse_args()
    raw = options.gamabench / "raw_results"
    if not raw.is_dir():
        sys.exit(f"{options.gamabench} holds no raw_results/: give a GAMA-Bench checkout")
    kinds, agreement = audit(raw)
    agree = sum(counts["agree"] for counts in agreement.values())
    total = sum(counts["agree"] + counts["disagree"] for counts in agreement.values())
    print(f"agentsim's default readers agree with GAMA-Bench's parse on {agree}/{total} published replies "
          f"({agree / total:.2%})")
    for game in sorted(agreement):
        counts = agreement[game]
        whole = counts["agree"] + counts["disagree"]
        print(f"  {game:<20} {counts['agree']}/{whole} ({counts['agree'] / whole:.2%})")
    print("disagreements, by kind:")
    for kind, count in kinds.most_common():
        print(f"  {count:7d}  {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
