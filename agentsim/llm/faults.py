"""What a provider's answer means for retries and the limiter, in one place: HTTP statuses to
error kinds, Retry-After and rate-limit headers to numbers.

Messages are built from status codes and kinds only, never from requests or headers, so a
key or an auth header cannot leak into an exception message or a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import aiohttp

from ..errors import BackendAuthError, BackendError, BackendSpecError


def error_for_status(provider: str, status: int, headers: Mapping[str, str] | None = None, body: Any = None,
                     *, key_variable: str = "") -> Exception:
    """The exception for an HTTP error answer. 401/403 stop the run (a UserError): every
    further call would be refused the same way."""
    headers = headers or {}
    if status in (401, 403):
        where = f" in {key_variable}" if key_variable else ""
        return BackendAuthError(f"{provider} refused the API key{where} (HTTP {status}); set a valid key and run again")
    if status == 404:  # every call would fail the same way: stop rather than fall back for every decision
        return BackendSpecError(f"{provider} answered HTTP 404 (no such model or endpoint); check the model name "
                                f"and the base URL in the backend spec")
    overloaded = status == 529 or (status == 429 and _says_overloaded(body)) or status == 503
    if status == 429 and not overloaded:
        kind = "rate_limited"
    elif overloaded:
        kind = "overloaded"
    elif status == 408:
        kind = "timeout"
    elif status >= 500:
        kind = "server"
    else:
        kind = "bad_request"
    return BackendError(f"{provider} answered HTTP {status} ({kind})", kind=kind, retry_after=retry_after(headers))


@contextlib.contextmanager
def sdk_errors(provider: str, sdk: Any, *, key_variable: str) -> Iterator[None]:
    """The OpenAI and Anthropic SDKs' exceptions (same names in both) as agentsim's
    BackendErrors, raised without the SDK's exception chained (it can hold request headers)."""
    try:
        yield
    except sdk.APIStatusError as error:
        raise error_for_status(provider, error.status_code, error.response.headers, _json_body(error.response),
                               key_variable=key_variable) from None
    except sdk.APITimeoutError as error:
        if not _hung_up(error):
            raise BackendError(f"{provider} call timed out", kind="timeout") from None
        raise BackendError(f"{provider} connection failed or dropped", kind="connection") from None
    except sdk.APIConnectionError:
        raise BackendError(f"{provider} connection failed or dropped", kind="connection") from None


@contextlib.asynccontextmanager
async def whole_answer_within(provider: str, seconds: float) -> AsyncIterator[None]:
    """`--timeout` over the whole exchange, the body included: the SDKs' own timeouts bound
    the connection and each read, so a body dripped a byte at a time never ends by them."""
    try:
        async with asyncio.timeout(seconds):
            yield
    except TimeoutError:
        raise BackendError(f"{provider} sent no whole answer within --timeout {seconds:g} s", kind="timeout") from None


def _hung_up(error: BaseException) -> bool:
    """Whether an SDK timeout is really a refused or dropped connection: the SDKs' aiohttp
    transport reports every aiohttp connection error as a connect timeout, and only the
    exception it was raised from says which it was."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError):
            return True
        cause = cause.__cause__
    return False


def _json_body(response: Any) -> Any:
    try:
        return response.json()
    except Exception:  # an error body that is not JSON says nothing more than its status
        return None


def _says_overloaded(body: Any) -> bool:
    """TGI answers an overloaded queue with 429 {"error_type": "overloaded"}; Anthropic's
    overloaded_error comes as 529, sometimes through proxies as 429 with that type."""
    if isinstance(body, Mapping):
        kind = body.get("error_type")
        error = body.get("error")
        if kind is None and isinstance(error, Mapping):
            kind = error.get("type")
        return isinstance(kind, str) and "overloaded" in kind
    return isinstance(body, str) and "overloaded" in body


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from `retry-after-ms`, `Retry-After` (seconds or an HTTP date)."""
    getter = _getter(headers)
    milliseconds = getter("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = getter("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed is not None else None


def rate_limit_signals(headers: Mapping[str, str]) -> dict[str, float]:
    """The limiter's hints from a successful answer's headers: OpenAI's
    x-ratelimit-remaining-requests / -tokens and reset, Anthropic's
    anthropic-ratelimit-requests-remaining, TGI's x-queue-time (in milliseconds)."""
    getter = _getter(headers)
    signals: dict[str, float] = {}
    for name, key in (("x-ratelimit-remaining-requests", "remaining_requests"),
                      ("anthropic-ratelimit-requests-remaining", "remaining_requests"),
                      ("x-ratelimit-remaining-tokens", "remaining_tokens"),
                      ("anthropic-ratelimit-tokens-remaining", "remaining_tokens")):
        value = getter(name)
        if value:
            try:
                signals[key] = float(value)
            except ValueError:
                pass
    reset = getter("x-ratelimit-reset-requests")
    if reset:
        seconds = _duration(reset)
        if seconds is not None:
            signals["reset_requests_s"] = seconds
    queue = getter("x-queue-time")
    if queue:
        try:
            signals["queue_time_s"] = float(queue) / 1000
        except ValueError:
            pass
    return signals


def _duration(text: str) -> float | None:
    """OpenAI's reset durations: '1s', '6m0s', '20ms', or plain seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    total, number = 0.0, ""
    index = 0
    while index < len(text):
        char = text[index]
        if char.isdigit() or char == ".":
            number += char
        elif text.startswith("ms", index):
            total += float(number or 0) / 1000
            number = ""
            index += 1
        elif char in "hms":
            total += float(number or 0) * {"h": 3600, "m": 60, "s": 1}[char]
            number = ""
        else:
            return None
        index += 1
    return total


def _getter(headers: Mapping[str, str]) -> Any:
    if hasattr(headers, "getall") or type(headers).__name__ in ("Headers", "CIMultiDictProxy", "CIMultiDict"):
        return headers.get  # already case-insensitive
    lowered = {key.lower(): value for key, value in headers.items()}
    return lowered.get
