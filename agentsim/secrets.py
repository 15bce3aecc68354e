"""Secrets never reach anything recorded: the store, summary.json, the logs, an exception's
message. Keys come from the environment and never enter a message; what can carry one by
accident is a URL with credentials (`http://user:KEY@host`). `strip_credentials` removes
them from a URL before it is shown or recorded, and `redact` removes every secret agentsim
was handed (registered with `register_secret`) from a text."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

_SECRETS: set[str] = set()
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s]*@)")


def register_secret(value: str | None) -> None:
    """Remember a secret (a key, a URL's password) so that `redact` removes it from texts."""
    if value and len(value) >= 4:
        _SECRETS.add(value)


def strip_credentials(url: str) -> str:
    """The URL without its `user:password@` part (registered as secrets first)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _USERINFO.sub(r"\g<scheme>", url)
    if parts.username is None and parts.password is None:
        return url
    register_secret(parts.password)
    register_secret(parts.username)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def redact(text: str) -> str:
    """`text` with URL credentials and every registered secret replaced by `***`."""
    text = _USERINFO.sub(r"\g<scheme>***@", text)
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, "***")
    return text
