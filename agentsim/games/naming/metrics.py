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

import collections
import math
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from ... import checkpoints
from ...records import EncounterRecord


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


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

    def checkpoint_problem(self) -> str | None:
        """What a checkpoint's MovingSum breaks (agentsim/checkpoints.py), or None."""
        if not (isinstance(self.size, int) and self.size >= 1 and isinstance(self.values, list)
                and len(self.values) == self.size and all(issubclass(kind, int) for kind in set(map(type, self.values)))):
            return f"with {_shown(self.values)} for a window of {self.size!r}"
        if not (0 <= self.position < self.size and 0 <= self.count <= self.size and 1 <= self.short <= self.size):
            return f"with position {self.position}, count {self.count} and short {self.short} outside its window"
        if self.total != sum(self.values):
            return f"with a total of {self.total} for values summing to {sum(self.values)}"
        return None

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

    def leaving(self, k: int) -> int:
        """The value the (k+1)-th push from now pushes out of the window (0 while it fills)."""
        return self.values[(self.position + k) % self.size] if self.count + k >= self.size else 0


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
            # the counts behind it: the paper's curve bins two rounds by them (critical_mass.paper_curve_of_rounds)
            "uncommitted_productions": self.uncommitted_productions,
            "uncommitted_alternative": self.uncommitted_alternative,
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

    def checkpoint_problem(self) -> str | None:
        """What a checkpoint's metrics break (agentsim/checkpoints.py), or None: the tallies
        each update keeps consistent with each other, checked before a resume uses them."""
        if not (isinstance(self.population, int) and self.population >= 1 and isinstance(self.window_size, int)
                and self.window_size >= 1 and 0 < self.threshold <= 1):
            return f"with population {self.population!r}, window {self.window_size!r}, threshold {self.threshold!r}"
        agents = [*self.committed, *self.current]
        if not (all(issubclass(kind, int) for kind in set(map(type, agents)))
                and (not agents or (min(agents) >= 0 and max(agents) < self.population))):
            return "with an agent outside the population"
        if any(window.size != self.window_size for window in (self.uncommitted, self.uncommitted_alternative)):
            return f"with windows of another size than {self.window_size}"
        counted = [(self.window_counts, collections.Counter(self.window_productions)),
                   (self.current_counts, collections.Counter(self.current.values())),
                   (self.uncommitted_counts, collections.Counter(name for agent, name in self.current.items()
                                                                 if agent not in self.committed))]
        for counts, expected in counted:
            if {name: count for name, count in counts.items() if count} != dict(expected):
                return "with name counts that disagree with the names they count"
        if len(self.window_productions) > 2 * self.window_size or self.interactions < 0 or self.fallbacks < 0:
            return f"with {len(self.window_productions)} productions in a window of {2 * self.window_size}"
        return None

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

    # --- how far the milestones are ----------------------------------------------------------
    def records_to_consensus(self, limit: int, players: int = 2) -> int:
        """The fewest further records after which `consensus` could be reached (every one a
        success, each moving `players` agents to the leading name), or `limit` if it could not
        be within `limit`: a lower bound the scheduler looks ahead by (docs/architecture.md)."""
        window = self.consensus_success
        deciders = self.population - len(self.committed)
        counts = [count for name, count in self.uncommitted_counts.items() if name is not None]
        missing = math.ceil(self.threshold * deciders - 1e-9) - max(counts, default=0)
        target = self.threshold * window.size - 1e-9
        # each record adds at most one success and moves at most `players` agents
        needed = max(window.size - window.count, -(-missing // players), math.ceil(target - window.total), 1)
        if needed >= limit:
            return limit
        total = window.total + sum(1 - window.leaving(k) for k in range(needed))
        while needed < limit and total < target:
            total += 1 - window.leaving(needed)
            needed += 1
        return min(needed, limit)

    def records_to_flip(self, limit: int, players: int = 2) -> int:
        """The fewest further records after which `flip` could be reached (every later move of
        a non-committed agent the alternative), or `limit`: a lower bound like
        `records_to_consensus`."""
        if self.alternative is None:
            return limit
        plays, alternative, threshold = self.uncommitted, self.uncommitted_alternative, self.threshold
        # flip when margin = alternative - threshold * plays >= 0. A record adds at most
        # players * (1 - threshold) to it and takes out what the record leaving the window added
        # (so it moves the margin by at most `players` in all).
        margin = alternative.total - threshold * plays.total + 1e-9
        needed = max(plays.size - plays.count, math.ceil(-margin / players), 1)
        if needed >= limit:
            return limit
        gain = players * (1 - threshold)
        for k in range(needed):
            margin += gain - alternative.leaving(k) + threshold * plays.leaving(k)
        while needed < limit and margin < 0:
            margin += gain - alternative.leaving(needed) + threshold * plays.leaving(needed)
            needed += 1
        return min(needed, limit)

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
