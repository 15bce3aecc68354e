"""What SIGN measures while a run goes, on top of the naming game's convention metrics.

- Population agreement per round, as the paper defines it: the count of the most common
  name produced in the round over the population size N (an agent that said no name counts
  against agreement; so does a fallback's name, which no reply said).
- Rounds and tokens to reach agreement thresholds (50%, 60%, 70%, 90%): the first round whose
  agreement reaches the threshold, and the prompt plus completion tokens of every call up to
  the end of that round, every attempt counted (discarded first attempts and retries too).
- How decisions got their names (`sign_schema.decision_route`): compliant at once, compliant
  after the retry, decoded from free text, fallback, no name; and the retry rate.
- With more than one model in the population: agreement split by model (the share of each
  model's agents whose latest name is the population's most common one) and each model's
  early favourite, so a mixed study can say whose name won.

Rounds are closed (their agreement computed) by the scenario's `on_round_end` once none of
their encounters is open, so the figures do not depend on the order answers came back.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...records import EncounterRecord
from ..naming.metrics import ConventionMetrics
from .schema import ROUTES, decision_route

THRESHOLDS = (0.5, 0.6, 0.7, 0.9)
EARLY = 3  # a model's early favourite: the name its agents said most in their first 3 encounters


class SignMetrics(ConventionMetrics):
    def __init__(self, *, population: int, success_window: int, consensus_window: int, threshold: float = 0.95,
                 labels: dict[int, str] | None = None, thresholds: tuple[float, ...] = THRESHOLDS) -> None:
        super().__init__(population=population, success_window=success_window, consensus_window=consensus_window,
                         threshold=threshold)
        self.labels = dict(labels or {})
        self.thresholds = thresholds
        self.open_rounds: dict[int, tuple[Counter[str | None], list[int]]] = {}
        self.agreement_history: list[float] = []
        self.tokens_history: list[int] = []  # cumulative tokens at the end of each closed round
        self.tokens = 0
        self.reached: dict[float, tuple[int, int]] = {}  # threshold -> (round, tokens)
        self.routes: Counter[str] = Counter()
        self.retried = 0
        self.decisions = 0
        self.early: dict[int, list[str | None]] = {}  # each agent's first EARLY names
        self.closed_rounds = 0

    def update(self, record: EncounterRecord) -> None:
        super().update(record)
        tally = self.open_rounds.get(record.round)
        if tally is None:
            tally = self.open_rounds[record.round] = (Counter(), [0])
        names, tokens = tally
        calls = record.calls
        tokens[0] += sum(call.prompt_tokens + call.completion_tokens for call in calls)
        for move in record.moves:
            said = None if move.fallback else move.action  # a fallback's name is no one's: no name said
            names[said] += 1
            own = [call for call in calls if call.agent == move.agent]
            self.routes[decision_route(own, move.action)] += 1
            self.retried += len(own) > 1
            self.decisions += 1
            early = self.early.setdefault(move.agent, [])
            if len(early) < EARLY:
                early.append(said)

    def close_rounds(self, before: int) -> None:
        """Compute agreement and cumulative tokens for every open round < before, in order."""
        for round_ in sorted(r for r in self.open_rounds if r < before):
            names, (tokens,) = self.open_rounds.pop(round_)
            counts = [count for name, count in names.items() if name is not None]
            agreement = max(counts) / self.population if counts else 0.0
            self.tokens += tokens
            self.agreement_history.append(agreement)
            self.tokens_history.append(self.tokens)
            self.closed_rounds += 1
            for threshold in self.thresholds:
                if threshold not in self.reached and agreement >= threshold:
                    self.reached[threshold] = (self.closed_rounds, self.tokens)

    # --- readings ------------------------------------------------------------------------
    def rate(self, route: str) -> float | None:
        return self.routes[route] / self.decisions if self.decisions else None

    def summary(self) -> dict[str, Any]:
        history = self.agreement_history
        tail = history[-10:]
        summary: dict[str, Any] = {
            "final_agreement": round(history[-1], 4) if history else 0.0,
            "tail_agreement": round(sum(tail) / len(tail), 4) if tail else 0.0,
            "mean_agreement": round(sum(history) / len(history), 4) if history else 0.0,
            "max_agreement": round(max(history), 4) if history else 0.0,
            "leading_name": self.modal_name(),
            "rounds_to_threshold": {f"{t:g}": self.reached[t][0] if t in self.reached else None for t in self.thresholds},
            "tokens_to_threshold": {f"{t:g}": self.reached[t][1] if t in self.reached else None for t in self.thresholds},
            "total_tokens": self.tokens,
            "decisions": self.decisions,
            "compliance_rate": _round(self.rate("compliant")),
            "retry_rate": _round(self.retried / self.decisions if self.decisions else None),
            "route_rates": {route: _round(self.rate(route)) for route in ROUTES},
            "agreement_by_round": [round(value, 4) for value in history],
            "tokens_by_round": list(self.tokens_history),
        }
        by_model = self.by_model()
        if len(by_model) > 1:
            summary["by_model"] = by_model
            winner = summary["leading_name"]
            summary["winning_model"] = sorted(label for label, row in by_model.items()
                                              if winner is not None and row["early_name"] == winner) or None
        return summary

    def modal_name(self) -> str | None:
        """The most common latest name (ties: the lexicon's earlier name, by text)."""
        counts = [(count, name) for name, count in self.current_counts.items() if name is not None and count]
        return min(counts, key=lambda item: (-item[0], item[1]))[1] if counts else None

    def by_model(self) -> dict[str, dict[str, Any]]:
        """Per model label: its agents, the share of them whose latest name is the population's
        most common one, and its early favourite (the name its agents said most in their first
        EARLY encounters): the model whose early favourite became the convention won."""
        modal = self.modal_name()
        groups: dict[str, list[int]] = {}
        for agent, label in sorted(self.labels.items()):
            groups.setdefault(label, []).append(agent)
        result = {}
        for label, agents in groups.items():
            firsts = Counter(name for agent in agents for name in self.early.get(agent, ()))
            firsts.pop(None, None)
            favourite = min(firsts.items(), key=lambda item: (-item[1], item[0]))[0] if firsts else None
            agreeing = sum(1 for agent in agents if modal is not None and self.current.get(agent) == modal)
            result[label] = {"agents": len(agents), "agreement": round(agreeing / len(agents), 4),
                             "early_name": favourite}
        return result


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
