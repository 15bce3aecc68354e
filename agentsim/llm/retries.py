"""Retries: a wrapper that asks again after a transient failure, with exponential backoff and
full jitter, a bounded number of attempts and a deadline per call.

The deadline is for a model reached over the network, which can hang or fall behind. A model
run in process gets none (`deadline=False`): its calls wait their turn for its one context
(llama.cpp) or batch, so the time a call spends is mostly the queue ahead of it, which grows
with the population and the model's size, not a sign that anything failed; and a worker thread
inside the model cannot be stopped, so a deadline could only fail a call the model is still
answering, and stop a run that was going well.

Full jitter (a uniform wait in [0, min(cap, base * 2^attempt)]) spreads the retries of many
concurrent calls that failed together, instead of sending them back in one burst. A
Retry-After from the server is a floor on the wait; one longer than what is left of the
call's deadline fails the call at once (a 429 asking for an hour is a failure, not a wait). The jitter's dice come from the request's
seed, so a run's waits are reproducible too. The SDKs' own retries are off (each backend sets
`max_retries=0`), so attempts don't multiply. Errors a retry cannot fix (a bad request, a
refused key) are raised at once.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from dataclasses import dataclass

from ..errors import BackendError, ParameterError
from ..seeding import derive_seed
from .base import Completion, LanguageModel, Request


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = 8
    base_s: float = 0.1
    cap_s: float = 10.0
    deadline_s: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ParameterError(f"--max-attempts must be at least 1 (got {self.max_attempts})")
        if not (math.isfinite(self.cap_s) and 0 < self.base_s <= self.cap_s):
            raise ParameterError("retry backoff needs 0 < base <= cap")
        if not (math.isfinite(self.deadline_s) and 0 < self.deadline_s <= 7 * 86_400):
            raise ParameterError(f"--deadline must be a number of seconds in (0, 604800] (got {self.deadline_s})")
        if not 1 <= self.max_attempts <= 1000:
            raise ParameterError(f"--max-attempts must be between 1 and 1000 (got {self.max_attempts})")

    def backoff(self, attempt: int, rng: random.Random) -> float:
        return rng.uniform(0, min(self.cap_s, self.base_s * (1 << min(attempt, 30))))


class RetryingModel:
    def __init__(self, inner: LanguageModel, policy: RetryPolicy, *, deadline: bool = True) -> None:
        self.inner = inner
        self.deadline = deadline  # False: a model in process, whose calls queue for it (above)
        self.name = inner.name
        self.immediate = inner.immediate
        self.policy = policy
        self.retries = 0

    async def complete(self, request: Request) -> Completion:
        policy = self.policy
        started = time.monotonic()
        failed: list[str] = []
        rng: random.Random | None = None
        for attempt in range(policy.max_attempts):
            remaining = policy.deadline_s - (time.monotonic() - started)
            try:
                async with asyncio.timeout(max(remaining, 0.001) if self.deadline else None):
                    completion = await self.inner.complete(request)
            except TimeoutError:
                error = BackendError(f"no answer within --deadline {policy.deadline_s:g} s", kind="timeout")
                raise _gave_up(error, failed) from None
            except BackendError as error:
                if not error.retryable:
                    raise _gave_up(error, failed) from None
                failed.append(error.kind)
                if rng is None:
                    rng = random.Random(derive_seed(request.seed or 0, 0x5E7))
                wait = policy.backoff(attempt, rng)
                if error.retry_after is not None:
                    wait = max(wait, error.retry_after)
                left = policy.deadline_s - (time.monotonic() - started) if self.deadline else math.inf
                if error.retry_after is not None and error.retry_after > left:
                    # Waiting would outlast the call's deadline: the server cannot serve it in
                    # time, which is a failure now, not a wait.
                    raise _gave_up(BackendError(f"{error} and asks to wait {error.retry_after:g} s (Retry-After), more "
                                                f"than the {max(left, 0):.3g} s left of --deadline {policy.deadline_s:g}",
                                                kind=error.kind, retry_after=error.retry_after),
                                   failed, attempts=attempt + 1) from None
                if attempt + 1 == policy.max_attempts or wait > left:
                    raise _gave_up(error, failed, attempts=attempt + 1) from None
                self.retries += 1
                await asyncio.sleep(wait)
                continue
            if failed:
                completion.retries = len(failed)
                completion.errors = tuple(failed)
            return completion
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        await self.inner.aclose()


def _gave_up(error: BackendError, failed: list[str], *, attempts: int | None = None) -> BackendError:
    message = str(error) if attempts is None else f"{error} (gave up after {attempts} attempt{'s' * (attempts > 1)})"
    final = BackendError(message, kind=error.kind, retry_after=error.retry_after)
    final.failed_attempts = tuple(failed[:-1] if attempts is not None else failed)
    return final
