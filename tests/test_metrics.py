"""Consensus and flip detection on histories built by hand."""

from __future__ import annotations

from agentsim.games.naming.metrics import ConventionMetrics, MovingSum
from agentsim.records import EncounterRecord, Move


def feed(metrics: ConventionMetrics, plays: list[tuple[int, str, int, str]], start: int = 0, round_size: int = 5) -> None:
    for offset, (first, first_name, second, second_name) in enumerate(plays):
        t = start + offset
        success = int(first_name == second_name)
        metrics.update(EncounterRecord(t, t // round_size, success,
                                       [Move(first, first_name, 0), Move(second, second_name, 0)], []))


def test_moving_sum_keeps_the_last_values_and_a_shorter_window() -> None:
    window = MovingSum(4, short=2)
    for value in (1, 1, 0, 1, 0, 0):
        window.push(value)
    assert window.total == 1  # the last four: 0, 1, 0, 0
    assert window.short_total == 0  # the last two: 0, 0
    assert window.full and window.count == 4


EVERYONE_A = [(2 * i, "A", 2 * i + 1, "A") for i in range(5)]  # all ten agents say A once


def test_consensus_needs_a_full_window_at_the_threshold() -> None:
    metrics = ConventionMetrics(population=10, success_window=10, consensus_window=30, threshold=0.95)
    feed(metrics, EVERYONE_A + [(0, "A", 1, "A")] * 24)
    assert metrics.consensus is None, "29 interactions cannot fill a window of 3N = 30"
    feed(metrics, [(2, "A", 3, "A")], start=29)
    assert metrics.consensus is not None and metrics.consensus.t == 29 and metrics.consensus.name == "A"


def test_consensus_waits_until_failures_leave_the_window() -> None:
    metrics = ConventionMetrics(population=10, success_window=10, consensus_window=30, threshold=0.95)
    everyone_b = [(2 * i, "B", 2 * i + 1, "B") for i in range(5)]
    feed(metrics, [(0, "A", 1, "B")] * 2 + everyone_b + [(0, "B", 1, "B")] * 23)  # 28/30 = 0.933
    assert metrics.consensus is None
    feed(metrics, [(0, "B", 1, "B")], start=30)  # 29/30 = 0.967
    assert metrics.consensus is not None and metrics.consensus.t == 30 and metrics.consensus.name == "B"


def test_consensus_means_agreement_not_success() -> None:
    """Two cliques joined by one edge: each succeeds within itself, all the time, on its own
    name; success is 100% but half the population says A and half B. No consensus."""
    metrics = ConventionMetrics(population=10, success_window=10, consensus_window=30, threshold=0.95)
    cliques = [(0, "A", 1, "A"), (2, "A", 3, "A"), (1, "A", 4, "A"), (5, "B", 6, "B"), (7, "B", 8, "B"), (9, "B", 5, "B")]
    feed(metrics, cliques * 20)
    assert metrics.success_rate == 1.0
    assert metrics.agreement == 0.5
    assert metrics.consensus is None
    # Then the B clique comes round to A: consensus, on A, once nine of ten say it.
    feed(metrics, [(5, "A", 0, "A"), (6, "A", 1, "A"), (7, "A", 2, "A")], start=120)
    assert metrics.consensus is None and metrics.agreement == 0.8
    feed(metrics, [(8, "A", 3, "A")], start=123)
    assert metrics.agreement == 0.9 and metrics.consensus is None  # below 0.95
    feed(metrics, [(9, "A", 4, "A")], start=124)
    assert metrics.agreement == 1.0 and metrics.consensus is not None and metrics.consensus.name == "A"


def test_agreement_leaves_the_committed_out() -> None:
    metrics = ConventionMetrics(population=6, committed=frozenset({4, 5}), alternative="Q", success_window=6,
                                consensus_window=6)
    feed(metrics, [(0, "M", 1, "M"), (2, "M", 4, "Q"), (3, "M", 5, "Q")])
    assert metrics.agreement == 1.0 and metrics.agreed_name() == "M"  # four of four non-committed say M


def test_success_rate_is_over_the_success_window() -> None:
    metrics = ConventionMetrics(population=4, success_window=4, consensus_window=12)
    feed(metrics, [(0, "A", 1, "B")] * 8 + [(0, "A", 1, "A")] * 3 + [(0, "A", 1, "B")])
    assert metrics.success_rate == 0.75


def test_flip_counts_only_uncommitted_agents() -> None:
    # Agents 8 and 9 are committed to Q; the others start on M.
    metrics = ConventionMetrics(population=10, committed=frozenset({8, 9}), alternative="Q",
                                success_window=10, consensus_window=30, threshold=0.95)
    feed(metrics, [(8, "Q", 0, "M")] * 30)  # the committed say Q, nobody else does
    assert metrics.flip is None and metrics.alternative_share() == 0.0
    # Each new interaction has one uncommitted production, Q; the window is 30 interactions.
    feed(metrics, [(8, "Q", 1, "Q")] * 28, start=30)
    assert metrics.flip is None, "28 of 30 is below 0.95"
    feed(metrics, [(9, "Q", 2, "Q")], start=58)
    assert metrics.flip is not None and metrics.flip.t == 58 and metrics.flip.name == "Q"  # 29 of 30


def test_agreement_is_the_most_common_current_choice() -> None:
    metrics = ConventionMetrics(population=4, success_window=4, consensus_window=12)
    feed(metrics, [(0, "A", 1, "B"), (2, "A", 3, "A"), (1, "A", 2, "C")])
    # current choices: 0 A, 1 A, 2 C, 3 A
    assert metrics.agreement == 0.75


def test_round_tallies() -> None:
    metrics = ConventionMetrics(population=4, success_window=4, consensus_window=12)
    feed(metrics, [(0, "A", 1, "A"), (2, "B", 3, "A")], round_size=2)
    (round_, stats), = metrics.pop_rounds(1)
    assert round_ == 0 and stats.as_dict()["success_rate"] == 0.5 and stats.productions == {"A": 3, "B": 1}
    assert metrics.success_history == [0.5]


def test_fallbacks_stand_beside_every_share_never_inside() -> None:
    """Issue 25: a run whose moves were mostly random fallbacks printed a flip share computed
    from them. Shares, agreement, the leading name and the flip count choices only."""
    metrics = ConventionMetrics(population=6, committed=frozenset({5}), alternative="Q", success_window=6,
                                consensus_window=3, threshold=0.95)
    chosen = [(0, "M", 5, "Q"), (1, "M", 5, "Q"), (2, "M", 5, "Q")]
    for t, (first, name, second, committed) in enumerate(chosen):
        metrics.update(EncounterRecord(t, 0, 0, [Move(first, name, -50), Move(second, committed, -50)], []))
    for t in range(3, 12):  # the others' moves are now all fallbacks that happen to say Q
        metrics.update(EncounterRecord(t, 1, 1, [Move(t % 3, "Q", 100, fallback=True), Move(5, "Q", 100)], []))
    assert metrics.fallbacks == 9
    assert metrics.flip is None, "no choice of the others said Q"
    assert metrics.alternative_share() is None, "no choice of the others in the window: no share, not 100%"
    assert metrics.agreement == 3 / 5 and metrics.agreed_name() == "M", "the latest choices, not the fallbacks"
    assert metrics.window_shares() == {"M": 0.0, "Q": 1.0}, "the last six plays: the committed agent's, labelled so"
    (_, first), (_, second) = metrics.pop_rounds(2)
    assert first.as_dict()["productions"] == {"M": 3, "Q": 3} and first.fallbacks == 0
    assert second.as_dict()["productions"] == {"Q": 9} and second.as_dict()["fallbacks"] == 9
    assert second.as_dict()["alternative_share"] is None
