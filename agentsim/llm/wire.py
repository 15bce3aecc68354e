"""JSON to and from model servers, with orjson: against a fast local server a tenth of the
client's CPU per call went to the standard library's encoder and decoder (a naming-game prompt,
TGI's token details), and orjson takes well under half of that (profiled with py-spy). What orjson refuses and the standard
library takes is still taken: integers past 64 bits on the way out, and on the way in the NaN
and Infinity that servers written in Python send (`json.dumps` writes them), so a server agentsim
read before is read the same now."""

from __future__ import annotations

import json
from typing import Any

import orjson

from ..errors import BackendError


def encode(value: Any) -> bytes:
    """`value` as a request body."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


def decode(raw: bytes | str) -> Any:
    """A response body's JSON; ValueError if it is not JSON."""
    try:
        return orjson.loads(raw)
    except ValueError:
        return json.loads(raw)


def decode_or_none(raw: bytes | str) -> Any:
    """A response body's JSON, or None if it is not JSON (an error page)."""
    try:
        return decode(raw)
    except ValueError:
        return None


def reply_text(value: Any, provider: str) -> str:
    """A reply's text as a server gave it: none at all (`null`) is an empty reply, which the game
    reads as unusable (re-asked, then a recorded fallback) like any reply naming no option; a
    value that is not text is a body that does not keep its format (retried as malformed)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BackendError(f"{provider} answered a reply whose text is not text", kind="malformed")
    return value
