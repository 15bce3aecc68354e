"""Secrets never reach anything recorded: the store, summary.json, the logs, an exception's
message. Keys come from the environment and never enter a message; what can carry one by
accident is a URL with credentials (`http://user:KEY@host`). `strip_credentials` takes them
out of any text that holds URLs (a backend spec, a population, a base URL) before it is
shown or recorded, and keeps them, by host, for the backend that connects there
(`credentials_for`); `redact` removes every secret seen so far from a text. A Ray sweep's
workers get the credentials they need as a task argument held in memory (`kept_credentials`
on the driver, `keep_credentials` on the worker), never in the plan, the store or a log."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

_SECRETS: set[str] = set()
_BY_HOST: dict[str, tuple[str, str]] = {}
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s,]*)@(?P<host>[^/\s,@?#]+)")


def register_secret(value: str | None) -> None:
    """Remember a secret (a key, a URL's password) so that `redact` removes it from texts."""
    if value and len(value) >= 4:
        _SECRETS.add(value)
        quoted = value.replace("%", "%25")
        if quoted != value:
            _SECRETS.add(quoted)


def strip_credentials(text: str) -> str:
    """`text` with the `user:password@` of every URL in it taken out (and kept by host)."""

    def strip(match: re.Match[str]) -> str:
        user, _, password = match["userinfo"].partition(":")
        user, password = unquote(user), unquote(password)
        for secret in _secrets_of(match["userinfo"], user, password):
            register_secret(secret)
        _BY_HOST[match["host"].lower()] = (user, password)
        return match["scheme"] + match["host"]

    return _URL_USERINFO.sub(strip, text)


def _secrets_of(userinfo: str, user: str, password: str) -> tuple[str, ...]:
    """What of a URL's `user:password` is secret: the password, or the user where it stands alone
    (a token given as `https://TOKEN@host`). A user name beside a password is not: masking
    `agent` would turn `agentsim.db` into `***sim.db` in every message after it."""
    return (userinfo, password) if password else (userinfo, user)


def kept_credentials() -> dict[str, tuple[str, str]]:
    """The credentials taken out of URLs so far, by host (for a Ray sweep's workers)."""
    return dict(_BY_HOST)


def keep_credentials(credentials: dict[str, tuple[str, str]]) -> None:
    """Take over credentials another process took out of URLs (a Ray worker, from its driver)."""
    for host, (user, password) in credentials.items():
        for secret in _secrets_of(f"{user}:{password}", user, password):
            register_secret(secret)
        _BY_HOST[host.lower()] = (user, password)


def credentials_for(url: str | None) -> tuple[str, str] | None:
    """The (user, password) a URL to this host was given with, if any."""
    if not url:
        return None
    try:
        host = urlsplit(url).netloc.rpartition("@")[2].lower()
    except ValueError:
        return None
    return _BY_HOST.get(host)


def redact(text: str) -> str:
    """`text` with URL credentials and every registered secret replaced by `***`."""
    text = _URL_USERINFO.sub(lambda match: f"{match['scheme']}***@{match['host']}", text)
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, "***")
    return text
