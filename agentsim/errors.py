"""The exceptions agentsim raises, in one place.

    AgentsimError                 base of everything below
    ├── UserError                 the user can fix it: the CLI prints the message as one line, exit 2
    │   ├── ParameterError        an impossible or unknown scenario parameter
    │   ├── ScenarioFileError     a scenario file that is missing, broken or holds no scenario
    │   ├── BackendSpecError      an unknown or malformed backend spec, a missing API key
    │   ├── BackendAuthError      a server refused the API key (HTTP 401/403)
    │   ├── ReplayMissError       --replay and a request the cache does not hold
    │   └── OutputDirError        an output directory that cannot be used as asked
    └── BackendError              a language-model call failed (raised by backends, handled by retries)

Messages never contain API keys or auth headers: backends build them from status codes and
error kinds, not from request objects.
"""

from __future__ import annotations


class AgentsimError(Exception):
    """Base class of every error agentsim raises on purpose."""


class UserError(AgentsimError):
    """An error the user caused and can fix; its message names the fix in one line."""


class ParameterError(UserError):
    """A scenario parameter that is unknown, of the wrong type, or impossible."""


class ScenarioFileError(UserError):
    """A scenario file that is missing, fails to import, or defines no scenario."""


class BackendSpecError(UserError):
    """A backend spec that names no known provider or lacks what the provider needs."""


class BackendAuthError(UserError):
    """A server refused the credentials: every further call would fail the same way."""


class ReplayMissError(UserError):
    """`--replay` asks for exact reproduction from the cache, and a request is not in it."""


class OutputDirError(UserError):
    """An output directory that would mix or overwrite experiments."""


class BackendError(AgentsimError):
    """A language-model call that failed; `kind` says how, for retries and accounting.

    Kinds: rate_limited (429), overloaded (529, TGI's overloaded 429), server (5xx),
    timeout, connection (refused or dropped), malformed (a body that is not the JSON promised),
    bad_request (4xx a retry cannot fix), error (anything else)."""

    RETRYABLE = frozenset({"rate_limited", "overloaded", "server", "timeout", "connection", "malformed"})

    def __init__(self, message: str, *, kind: str = "error", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in self.RETRYABLE
