"""A commons run read back from the store, month by month: the harvest (wanted, caught),
the discussion as it was said, the agreed limit, each villager's insights. Every call's
exact prompt and reply is `python -m agentsim transcript DIR` (a round there is a step of
the month; each call's context names its month).

    python -m agentsim commons-transcript DIR [--run N]
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ...store import Store
from .parser import read_utterance
from .prompts import WORDS


def transcript(store: Store, run: int, resource: str = "fishing") -> Iterator[str]:
    row = next((row for row in store.runs() if row["run"] == run), None)
    if row is None:
        raise KeyError(f"no run {run} in this directory")
    summary = row["summary"] or {}
    words = WORDS[(summary.get("variant_params") or {}).get("resource", resource)]  # a grid's cell may change it
    yield (f"Run {run} (seed {row['seed']}, {row['backend']}): {summary.get('resource', resource)}, "
           f"{summary.get('condition', 'default')}; status {row['status']}, stop: {row['stop_reason']}, "
           f"outcome: {summary.get('outcome', 'unknown')}")
    stocks = summary.get("stock") or []
    calls: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for call in store.rows("SELECT t, agent, attempt, context, reply, parsed, action, payoff, error FROM decisions "
                           "WHERE run = ? ORDER BY t, agent, attempt", (run,)):
        calls[call[0]].append(call)
    month = discussed = 0
    for t in sorted(calls):
        first = calls[t][0]
        situation = json.loads(first[3]) if first[3] else {}
        if situation.get("month", month) != month:
            month = situation["month"]
            stock = f" {words.stock.format(stock=stocks[month - 1])}" if month - 1 < len(stocks) else ""
            yield f"\n== Month {month} ({situation.get('date', '')}).{stock}"
        kind = situation.get("kind", "")
        finals = [call for call in calls[t] if call[7] is not None]
        if kind == "harvest":
            said = ", ".join(f"{_name(calls[t], call[1])} wanted {call[6]} and got {int(call[7])}"
                             + (" (fallback)" if call[8] else "") for call in finals)
            yield f"Harvest: {said}."
        elif kind == "utterance":
            if discussed != month:
                discussed = month
                yield "Discussion:"
                for speaker, line in situation.get("conversation", [])[:1]:
                    yield f"  {speaker}: {line}"
            for call in finals:
                if call[6] is None:
                    yield f"  {situation.get('name')}: (no usable reply; the discussion ends)"
                    continue
                text, end, following = read_utterance(call[6])
                yield f"  {situation.get('name')}: {text}" + ("" if end else f"  [next: {following}]")
        elif kind == "limit":
            limit = finals[0][6] if finals else None
            yield f"Agreed limit: {'none' if limit in (None, 'none') else f'{limit} {words.unit} per person'}."
        elif kind == "reflection":
            for call in finals:
                insights = json.loads(call[6]) if call[6] else []
                yield f"Reflection, {situation.get('name')}: " + ("; ".join(insights) if insights else "(none)")


def _name(calls: list[tuple[Any, ...]], agent: int) -> str:
    for call in calls:
        if call[1] == agent and call[3]:
            return str(json.loads(call[3]).get("name", agent))
    return str(agent)
