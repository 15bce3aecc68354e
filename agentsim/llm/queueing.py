"""Is the server queueing the calls we send? The latency rule of the limiter (llm/limiter.py).

A server that queues instead of refusing (llama-server with K slots, vLLM, TGI below its queue
limit) never answers 429: beyond K calls in flight its throughput stays flat and only its
latency grows. Counting on refusals alone, the limiter would fill that queue up to
--max-in-flight: no faster, and every call slower. This rule finds K from latency, as TCP Vegas
and Netflix's concurrency limits do: with L calls in flight and K served at once, a call takes
about max(1, L / K) times its unqueued latency, so once L exceeds K latency grows with L, and
L x unqueued latency / latency estimates K.

It decides once a round trip (when a call sent after the last decision comes back: each
decision sees what the one before did), on that round trip's answers:

- `recent` is their mean latency, `recent_sent` the mean of the calls in flight when they were
  sent. The floor is the lowest `recent` of the last `window` round trips: the unqueued
  latency. Windowed, so that a server (or prompts) slowing down for good is not read as a queue
  for ever: a stale floor would pin the cap to its minimum;
- queueing is evident when `recent` exceeds the floor by the tolerance (x 1.5: a third of the
  calls in flight waiting) and by the noise in the difference of two means: prompts of
  different lengths take different times, and the floor, lowest of many noisy means, sits
  below a typical unqueued latency. The noise is four times the answers' spread (their mean
  distance from their round trip's mean, median over the window; within a round trip, not
  across, as the cap moves between them) x sqrt(1/n1 + 1/n2). Without it a hosted API whose
  latency merely varies would be cut to nothing. And some round trip of the window with a
  fifth fewer calls in flight must have been faster by that margin: a server slower for
  everyone at the same load is no reason to send fewer. Slow with no such round trip (the
  floor was seen at full load: llama-server answers its first prompts fast from its prompt
  cache), the rule halves the calls in flight for three round trips, at most once a half
  window, to see;
- then the cap goes to recent_sent x (floor + half the margin) / recent: K, and a little more
  so that the server has the next call at hand when one finishes; never below two (with one
  slot and a cap of one it idles while each answer travels back and the next request comes);
- above three quarters of the margin the cap holds; below, it grows by one per round trip
  once a knee has been found in the window (TCP Vegas: growing by half per answer, the
  usual pace after a 429, overshoots a few slots twofold before the latency shows it), by
  the usual pace otherwise. Below the last knee's cap, and while 429s come, it grows at the
  usual pace unless queueing: each 429 takes one off, and anything slower would let a steady
  20% of them wear the cap down (0.51 of the stand-in server's capacity instead of 0.9);
- at a steady cap a little above K every call queues a little, and as the window forgets the
  unqueued round trips the floor would creep up to the queued latency, and the cap with it.
  So every half window, once a knee is known, the cap drops to the estimate of K for three
  round trips (TCP BBR's probe): every slot stays busy and the calls do not queue, so the
  window keeps an unqueued latency.

A server that batches what is in flight (TGI, vLLM on a GPU) is not a queue, though its latency
grows with the calls in flight too: a batch of 128 takes longer than a batch of one, while the
calls it serves a second (counted over each round trip) grow many-fold; and one
batch's time varies by half from the next, so a round trip, often one batch, is a noisy mean.
Read as a queue, it was cut to 2 calls in flight on an H100 (11 calls a second where a plain
client got 245). So two round trips after each cut the rule compares the calls served a second
with those before it: a queue serves as many with fewer in flight, a batching server far fewer
(by UNDO_LOSS). Such a cut is undone, and for a window (renewed while it holds) the rule cuts
only where the window's round trips near today's load serve no more (GAIN) than those with a
fifth to three fifths fewer in flight, and makes no probes.

tests/test_limiter_latency.py drives simulated servers with K = 1 to 8 slots on a virtual
clock: the cap settles between K and 2K with the slots busy over 90% of the time; a server
whose latency does not grow with calls in flight (a hosted API) never sees a cut. None of
this changes what a run records, only how fast it goes.
"""

from __future__ import annotations

import collections
import math
import statistics

GAIN = 1.1  # served a second near today's load over a fifth to three fifths fewer: a batching server
JUDGED = 16  # answers under a cut before it is judged (or twice the cap it set, if fewer)
UNDO_LOSS = 1.3  # served a second before a cut over after it: the cut was a batching server's loss, undone


class QueueingRule:
    """The state of the latency rule for one limiter; `answered` is called for every answer."""

    def __init__(self, *, tolerance: float, window: int, now: float) -> None:
        self.tolerance, self.window = tolerance, window
        # the last round trip's answers: mean latency, mean calls in flight when sent, how many
        self.recent = self.recent_sent = 0.0
        self.recent_count = 1
        # each round trip's `recent`, with the calls in flight then and the answers it averages
        self.lows: collections.deque[tuple[float, float, int]] = collections.deque(maxlen=window)
        self.spreads: collections.deque[float] = collections.deque(maxlen=window)
        self.floor: tuple[float, float, int] = (0.0, 0.0, 1)  # min(lows): the unqueued latency, its load, its answers
        self.spread = 0.0  # the median of `spreads`
        self.rates: collections.deque[tuple[float, float]] = collections.deque(maxlen=window)  # (calls in flight, served a second)
        self.round_answers: list[tuple[float, int, float]] = []  # latency, in flight when sent, the server's share
        self.round_served = 0.0  # the sum of round_answers' server shares, kept as they come (a mean per answer is quadratic)
        self.round_started = now
        self.rounds = 0
        self.state = "clear"  # clear: grow; near: hold; queueing: cut, then hold
        self.knee_round: int | None = None  # the round trip of the last cut
        self.knee_cap = 0.0  # the cap it set
        self.refused_round: int | None = None  # the round trip of the last 429
        self.probe_cap: int | None = None  # the cap while a probe runs
        self.probe_rounds = 0
        self.last_probe = 0  # the round trip the last probe began
        self.cuts = self.probes = 0
        self.batching = False  # within a window of finding a batching server (below)
        self.batching_round: int | None = None  # the round trip a cut was undone for costing served calls
        self.before_cut: tuple[float, float, float] | None = None  # the last cut: the cap before, its served rate, the cap after
        self.after_cut: list[tuple[float, int]] = []  # since: each round trip's served rate and answers

    def answered(self, latency: float, sent_with: int, started: float, now: float, limit: float,
                 client: float = 0.0) -> float | None:
        """Take one answer in; a lower cap when the server is queueing our calls, else None.
        `client`: the part of `latency` the client's own busy loop is thought to have added.
        It is taken off the latencies compared with the floor, not off the floor's own (an
        overestimate then errs towards not cutting, never towards a floor of nothing)."""
        served = max(0.0, latency - client)
        self.round_answers.append((latency, sent_with, served))
        self.round_served += served
        if started < self.round_started:
            # sent before the last decision: no news about it, but growing stops the moment
            # latency leaves the floor (growing on for the rest of the round trip overshoots)
            if self.state == "clear" and not self.batching and self.lows and len(self.round_answers) >= 2 \
                    and self.round_served / len(self.round_answers) > self.bound(0.75, len(self.round_answers)):
                self.state = "near"
            return None
        return self._decide(now, limit)

    def _decide(self, now: float, limit: float) -> float | None:
        self.rounds += 1
        elapsed, self.round_started = now - self.round_started, now
        # calls served a second over the round trip, counted (Little's law from the calls in
        # flight when sent misleads while a cut drains: those calls still wait behind the old queue)
        rate = len(self.round_answers) / elapsed if elapsed > 0 else 0.0
        latencies = [answer for answer, _, _ in self.round_answers]
        self.recent = statistics.fmean(latencies)
        served = statistics.fmean(answer for _, _, answer in self.round_answers)  # the server's share
        self.recent_sent = statistics.fmean(sent for _, sent, _ in self.round_answers)
        self.recent_count = len(latencies)
        self.round_answers.clear()
        self.round_served = 0.0
        self.lows.append((self.recent, self.recent_sent, self.recent_count))
        self.rates.append((self.recent_sent, rate))
        if len(latencies) >= 2:  # within one round trip, not across: the cap moves between them
            spread = statistics.fmean(abs(answer - self.recent) for answer in latencies)
            self.spreads.append(spread * math.sqrt(len(latencies) / (len(latencies) - 1)))
        # what `bound` reads, at every answer: they change only here
        self.floor = min(self.lows)
        self.spread = statistics.median(self.spreads) if self.spreads else 0.0
        if self.probe_cap is not None:
            self.probe_rounds -= 1
            if self.probe_rounds <= 0:
                self.probe_cap = None
            return None
        recent = served
        undone = self._undo_costly_cut(rate, self.recent_count)
        if undone is not None:
            return undone
        cut = None
        self.batching = self.batching_round is not None and self.rounds - self.batching_round <= self.window
        trend = self._served_trend() if self.batching and recent > self.bound(0.75) else None
        if self.batching and trend != "flat":
            # a server that batches what is in flight (TGI, vLLM on a GPU): slower with more
            # calls, but serving more of them a second; keep sending, and believing it until the
            # served rate is seen flat
            self.state = "clear"
            self.batching_round = self.rounds
        elif recent > self.bound(1.0) and not self._at_lower_load(recent):
            # slow, but no faster with fewer calls in flight, or never seen with fewer: halve
            # them for a few round trips (at most once a half window) and see
            self.state = "near"
            if self.rounds - self.last_probe >= self.window // 2 and limit >= 2:
                self._probe(int(limit / 2))
        elif recent > self.bound(1.0):
            self.state = "queueing"
            # K is about recent_sent x unqueued / recent; the floor plus half the margin stands for
            # the unqueued latency (the floor is the lowest of noisy means). Never below two: with
            # one slot and a cap of one the server would idle while each answer travels back and
            # the next request comes
            cut = max(limit / 2, min(limit, max(2.0, self.recent_sent * self.bound(0.5) / recent)))
            if self.before_cut is not None and not self._latency_tracks_load(recent):
                cut = None  # the last cut is not judged yet (`_undo_costly_cut`): no second on top of it
            elif cut < limit:
                self.cuts += 1
                self.knee_round, self.knee_cap = self.rounds, cut
                before = [served for sent, served in self.rates if sent >= self.recent_sent / 1.1]  # this round trip's too
                self.before_cut = (limit, statistics.fmean(before), cut)
                self.after_cut = []
            else:
                cut = None
        elif recent > self.bound(0.75):
            self.state = "near"
        else:
            self.state = "clear"
        if not self.batching and self.knee_round is not None and self.rounds - self.last_probe >= self.window // 2:
            # at the slots' estimate: as many served as now, none waiting, nothing lost
            slots = int(self.recent_sent * self.floor[0] / recent) if recent > 0 else 1
            if 1 <= slots < int(cut or limit):
                self._probe(slots)
        return cut

    def _undo_costly_cut(self, rate: float, answers: int) -> float | None:
        """After a cut, once two round trips and JUDGED answers were sent under it: if the server
        serves fewer calls a second than at the cap before (the window's round trips at that
        load), by UNDO_LOSS, the latency was not a queue's (a queue serves as many with fewer in
        flight) but a batching server's, which serves fewer with fewer in flight. Back to the
        cap before the cut; for a window (renewed while no flat served rate is seen) the rule
        cuts only where `_served_trend` sees the served rate flat, and makes no probes."""
        if self.before_cut is None:
            return None
        self.after_cut.append((rate, answers))
        if len(self.after_cut) < 2 or sum(count for _, count in self.after_cut) < min(JUDGED, 2 * self.before_cut[2]):
            return None
        limit, before, _ = self.before_cut
        after = sum(rate * count for rate, count in self.after_cut) / sum(count for _, count in self.after_cut)
        self.before_cut = None
        if after >= before / UNDO_LOSS:
            return None
        self.batching_round, self.knee_round, self.state = self.rounds, None, "clear"
        return limit

    def _latency_tracks_load(self, recent: float) -> bool:
        """Has latency grown with the calls in flight as a queue's does (at least half as fast as
        them, from the floor)? Then a cut may follow the last before it is judged: a batching
        server's latency grows far slower than its load (a batch of 128 takes 2.3 times one)."""
        floor, floor_sent, _ = self.floor
        return floor > 0 and floor_sent > 0 and recent / floor >= 0.5 * self.recent_sent / floor_sent

    def _served_trend(self) -> str | None:
        """The calls served a second (counted over each round trip): a queue (K slots) serves no
        more with more calls in flight, however slow each call gets; a server
        that batches what is in flight (TGI, vLLM on a GPU) serves more, at a higher latency.
        "more": the window's round trips at today's load served GAIN times what those with a
        fifth to three fifths fewer in flight served; "flat": they did not; None: too few of
        either to tell. Means of several round trips: a batching server's round trip is often
        one batch, whose time varies by half from one batch to the next."""
        load = self.recent_sent
        near = [rate for sent, rate in self.rates if sent >= load / 1.1]
        lower = [rate for sent, rate in self.rates if load / 2.5 <= sent <= load / 1.25]
        if len(lower) < 2 or len(near) < 2:
            return None
        return "more" if statistics.fmean(near) > GAIN * statistics.fmean(lower) else "flat"

    def _at_lower_load(self, recent: float) -> bool:
        """Was latency lower by the margin with a fifth fewer calls in flight, in the window? Then
        the queue is ours: a server slower for everyone at the same load is no reason to send fewer."""
        lower = [latency for latency, sent, _ in self.lows if sent <= self.recent_sent / 1.25]
        return bool(lower) and recent > min(lower) + (self.bound(1.0) - self.floor[0])

    def _probe(self, cap: int) -> None:
        self.probes += 1
        self.last_probe = self.rounds
        self.probe_cap, self.probe_rounds = max(1, cap), 3

    def bound(self, share: float, count: int | None = None) -> float:
        """The floor plus `share` of the margin by which latency must exceed it for queueing to be
        evident: the tolerance, or the noise in the difference of two means of answers (the
        floor's and the latest, of `count` answers): four mean spreads x sqrt(1/n1 + 1/n2)."""
        floor, _, floor_count = self.floor
        noise = 4 * self.spread * math.sqrt(1 / floor_count + 1 / (count or self.recent_count))
        return floor + share * max((self.tolerance - 1) * floor, noise)

    def knee_known(self) -> bool:
        return self.knee_round is not None and self.rounds - self.knee_round <= self.window

    def refused(self) -> None:
        """A 429: the limiter took one off the cap."""
        self.refused_round = self.rounds

    def growth(self, limit: float, usual: float) -> float:
        """The cap's growth per answer. Below the last knee's cap, or while 429s come (in the
        window), the usual pace unless queueing (TCP's slow start up to its threshold): 429s
        take one off the cap each, and growing slower than the usual pace would let a steady
        share of them wear the cap down to nothing. Otherwise: none while queueing, probing or
        near the knee, one per round trip while a knee found in the window is near, the usual
        pace else."""
        refusing = self.refused_round is not None and self.rounds - self.refused_round <= self.window
        if (limit < self.knee_cap or refusing) and self.state != "queueing":
            return usual
        if self.state != "clear" or self.probe_cap is not None:
            return 0.0
        return 1 / max(1.0, limit) if self.knee_known() else usual
