"""A commons run read back from the store, month by month: the harvest (wanted, caught),
the discussion as it was said, the agreed limit, each villager's insights; with `prompts`,
every call's exact messages (rebuilt from its stored context) and replies, re-asks included.

    python -m agentsim commons-transcript DIR [--run N] [--prompts]
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ...store import Store
from .game import CommonsGame
from .parser import read_utterance
from .prompts import WORDS


def transcript(store: Store, scenario: CommonsGame, run: int, *, prompts: bool = False) -> Iterator[str]:
    words = WORDS[scenario.params.resource]
    units = words.unit_plural
    row = next((row for row in store.runs() if row["run"] == run), None)
    if row is None:
        raise KeyError(f"no run {run} in this directory")
    summary = row["summary"] or {}
    if summary.get("variant_params"):  # a run of a grid: its own condition's prompts
        scenario = scenario.with_params(**summary["variant_params"])
    yield (f"Run {run} (seed {row['seed']}, {row['backend']}): {scenario.params.resource}, "
           f"{summary.get('condition', 'default')}; status {row['status']}, stop: {row['stop_reason']}")
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
            stock = f"; {stocks[month - 1]} {units} at the start" if month - 1 < len(stocks) else ""
            yield f"\n== Month {month} ({situation.get('date', '')}){stock}"
        kind = situation.get("kind", "")
        if prompts:
            yield from _prompts(store, scenario, run, t, calls[t])
            continue
        finals = [call for call in calls[t] if call[7] is not None]
        if kind == "harvest":
            said = ", ".join(f"{_name(calls[t], call[1])} wanted {call[6]} and {words.taken} {int(call[7])}"
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
            yield f"Agreed limit: {'none' if limit in (None, 'none') else f'{limit} {units} per person'}."
        elif kind == "reflection":
            for call in finals:
                insights = json.loads(call[6]) if call[6] else []
                yield f"Reflection, {situation.get('name')}: " + ("; ".join(insights) if insights else "(none)")


def _name(calls: list[tuple[Any, ...]], agent: int) -> str:
    for call in calls:
        if call[1] == agent and call[3]:
            return str(json.loads(call[3]).get("name", agent))
    return str(agent)


def _prompts(store: Store, scenario: CommonsGame, run: int, t: int, calls: list[tuple[Any, ...]]) -> Iterator[str]:
    for t_, agent, attempt, context, reply, parsed, _action, _payoff, error in calls:
        situation = json.loads(calls[0][3]) if context == "" else json.loads(context)
        yield f"\n--- t {t_}, {situation.get('kind')}, agent {agent} ({situation.get('name') or 'framework'}), attempt {attempt}"
        if attempt == 0:
            for message in store.messages(scenario, run, t_, agent, attempt):
                yield f"[{message.role}]\n{message.content}"
        else:
            yield f"[user]\n{store.messages(scenario, run, t_, agent, attempt)[-1].content}"
        yield f"[reply]\n{reply}"
        yield f"[read as] {parsed}" + (f"  (problem: {error})" if error else "")
