"""What is measured while a convention-forming run goes (naming game and its relatives).

- success rate over a moving window of interactions;
- each name's production share, per population round (the paper's Fig. 1B);
- agreement: the leading name's share among the non-committed agents, each counted by its
  latest chosen name (an agent that has not chosen yet agrees with nobody);
- consensus: agreement at least `threshold`, with the paper's criterion, at least `threshold`
  success over the last `window` interactions (3N by default). Success alone is not
  agreement: two cliques joined by one edge succeed almost always while half the population
  says A and half B;
- flip, with a committed minority: the alternative's share among the productions of
  non-committed agents at least `threshold` over the same window.

Shares, agreement, the leading name and the flip count choices only: a move that is the game's
fallback (no reply gave it, `Move.fallback`) still plays its part in the game (its payoff, the
success rate), but it is no one's choice, so it is counted beside (`fallbacks`, per round and
in total) and never inside a share. Committed agents' plays are their rule's and count as
plays where a figure says so.

Metrics consume resolved encounters in sequence order (t), so a milestone's t and round are
those of the one-at-a-time process; they go whole into checkpoints (agentsim/checkpoints.py),
so they hold plain data only.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from ... import checkpoints
from ...records import EncounterRecord


class MovingSum:
    """The sum of the last `size` values pushed (a ring buffer), and of the last `short` of them."""

    __slots__ = ("count", "position", "short", "short_total", "size", "total", "values")

    def __init__(self, size: int, short: int = 0) -> None:
        self.size = size
        self.short = min(short, size) or size
        self.values = [0] * size
        self.total = self.short_total = self.count = self.position = 0

    def push(self, value: int) -> None:
        position, values = self.position, self.values
        self.total += value - values[position]
        # The value leaving the short window sits `short` places back (empty slots hold 0).
        self.short_total += value - values[position - self.short]
        values[position] = value
        self.position = position + 1 if position + 1 < self.size else 0
        if self.count < self.size:
            self.count += 1

    @property
    def full(self) -> bool:
        return self.count >= self.size

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    @property
    def short_mean(self) -> float:
        seen = min(self.count, self.short)
        return self.short_total / seen if seen else 0.0


@dataclass(slots=True)
class RoundStats:
    """One population round's tallies: encounters t with t // round_size equal to it."""

    interactions: int = 0
    successes: int = 0
    productions: dict[str | None, int] = field(default_factory=dict)  # chosen names (and committed plays)
    fallbacks: int = 0  # moves that were fallbacks: in no production count
    uncommitted_productions: int = 0
    uncommitted_alternative: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "interactions": self.interactions,
            "successes": self.successes,
            "success_rate": self.successes / self.interactions if self.interactions else None,
            # No name (None) sorts last: a reply that named none sits beside the names.
            "productions": dict(sorted(self.productions.items(), key=lambda item: (item[0] is None, item[0] or ""))),
            "fallbacks": self.fallbacks,
            "alternative_share": (self.uncommitted_alternative / self.uncommitted_productions
                                  if self.uncommitted_productions else None),
        }


@dataclass(frozen=True)
class Milestone:
    t: int
    round: int
    name: str | None


class ConventionMetrics:
    def __init__(
        self,
        *,
        population: int,
        committed: frozenset[int] = frozenset(),
        alternative: str | None = None,
        success_window: int,
        consensus_window: int,
        threshold: float = 0.95,
    ) -> None:
        self.population = population
        self.committed = committed
        self.alternative = alternative
        self.threshold = threshold
        # One ring over the larger window; its `short` sum is the success window.
        self.success = MovingSum(max(consensus_window, success_window), short=success_window)
        self.consensus_success = self.success if consensus_window >= success_window else MovingSum(consensus_window)
        self.window_productions: deque[str | None] = deque()
        self.window_counts: dict[str | None, int] = {}
        self.window_size = consensus_window
        self.uncommitted = MovingSum(consensus_window)
        self.uncommitted_alternative = MovingSum(consensus_window)
        self.current: dict[int, str | None] = {}  # every agent's latest name
        self.current_counts: dict[str | None, int] = {}
        self.uncommitted_counts: dict[str | None, int] = {}  # the non-committed agents' latest names
        self.rounds: dict[int, RoundStats] = {}  # by round
        self.success_history: list[float] = []  # one success rate per finished round
        self.consensus: Milestone | None = None
        self.flip: Milestone | None = None
        self.interactions = 0
        self.fallbacks = 0  # fallback moves, in no share

    def update(self, record: EncounterRecord) -> None:
        self.interactions += 1
        success = 1 if record.outcome else 0
        self.success.push(success)
        if self.consensus_success is not self.success:
            self.consensus_success.push(success)
        stats = self.rounds.get(record.round)
        if stats is None:
            stats = self.rounds[record.round] = RoundStats()
        stats.interactions += 1
        stats.successes += success
        productions, window_counts, current, current_counts, uncommitted_counts, committed = (
            self.window_productions, self.window_counts, self.current, self.current_counts,
            self.uncommitted_counts, self.committed)
        for move in record.moves:
            if move.fallback:
                stats.fallbacks += 1
                self.fallbacks += 1
                continue
            name = move.action
            stats.productions[name] = stats.productions.get(name, 0) + 1
            productions.append(name)
            window_counts[name] = window_counts.get(name, 0) + 1
            previous = current.get(move.agent, _NOTHING)
            if previous is not _NOTHING:
                current_counts[previous] -= 1
            current[move.agent] = name
            current_counts[name] = current_counts.get(name, 0) + 1
            if move.agent not in committed:
                if previous is not _NOTHING:
                    uncommitted_counts[previous] -= 1
                uncommitted_counts[name] = uncommitted_counts.get(name, 0) + 1
        while len(productions) > 2 * self.window_size:
            window_counts[productions.popleft()] -= 1
        if self.alternative is not None:
            uncommitted = alternative = 0
            for move in record.moves:
                if move.agent not in self.committed and not move.fallback:
                    uncommitted += 1
                    alternative += move.action == self.alternative
            self.uncommitted.push(uncommitted)
            self.uncommitted_alternative.push(alternative)
            stats.uncommitted_productions += uncommitted
            stats.uncommitted_alternative += alternative
            if (self.flip is None and self.uncommitted.full and self.uncommitted.total
                    and self.uncommitted_alternative.total / self.uncommitted.total >= self.threshold):
                self.flip = Milestone(record.t, record.round, self.alternative)
        window = self.consensus_success
        if (self.consensus is None and window.full and window.total >= self.threshold * window.size
                and self.agreement >= self.threshold):
            self.consensus = Milestone(record.t, record.round, self.agreed_name())

    # --- readings ------------------------------------------------------------------------
    @property
    def success_rate(self) -> float:
        """Success over the last `success_window` interactions."""
        return self.success.short_mean

    @property
    def agreement(self) -> float:
        """The leading name's share among the non-committed agents (by their latest names)."""
        deciders = self.population - len(self.committed)
        counts = [count for name, count in self.uncommitted_counts.items() if name is not None]
        return max(counts) / deciders if counts and deciders > 0 else 0.0

    def agreed_name(self) -> str | None:
        """The non-committed agents' most common latest name (ties: the first by text)."""
        counts = [(-count, name) for name, count in self.uncommitted_counts.items() if name is not None and count]
        return min(counts)[1] if counts else None

    def leading_name(self) -> str | None:
        counts = [(count, name) for name, count in self.window_counts.items() if name is not None and count]
        return max(counts)[1] if counts else None

    def alternative_share(self) -> float | None:
        return self.uncommitted_alternative.total / self.uncommitted.total if self.uncommitted.total else None

    def window_shares(self) -> dict[str, float]:
        """Each name's share of the productions over the last `window` interactions."""
        total = sum(count for name, count in self.window_counts.items() if name is not None)
        return {str(name): count / total for name, count in self.window_counts.items() if name is not None and total}

    def pop_rounds(self, before: int) -> list[tuple[int, RoundStats]]:
        """Remove and return the tallies of rounds that are over (all rounds < before)."""
        done = [(round_, self.rounds.pop(round_)) for round_ in sorted(self.rounds) if round_ < before]
        self.success_history.extend(stats.successes / stats.interactions for _, stats in done if stats.interactions)
        return done


class _Missing(Enum):
    """An agent with no latest name yet (None is a name: no usable answer)."""

    MISSING = 0


_NOTHING: Final = _Missing.MISSING


# Stored under the names they had at the top level (agentsim.metrics), so that checkpoints written
# before the naming family owned them still resume.
for _cls in (MovingSum, RoundStats, Milestone, ConventionMetrics):
    checkpoints.register(_cls, name=f"agentsim.metrics.{_cls.__qualname__}")
