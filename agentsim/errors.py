"""The exceptions agentsim raises, in one place.

    AgentsimError                 base of everything below
    ├── UserError                 the user can fix it: the CLI prints the message as one line, exit 2
    │   ├── ParameterError        an impossible or unknown scenario parameter
    │   ├── ArgumentError         a Python API argument of the wrong type (also a TypeError)
    │   ├── ScenarioFileError     a scenario file that is missing, broken or holds no scenario
    │   ├── BackendSpecError      an unknown or malformed backend spec, a missing API key, an unknown model (404)
    │   ├── BackendAuthError      a server refused the API key (HTTP 401/403)
    │   ├── ReplayMissError       --replay and a request the cache does not hold
    │   ├── OutputDirError        an output directory that cannot be used as asked
    │   └── DamagedStoreError     a database or checkpoint that cannot be read back (nothing is changed)
    ├── RunStopped                the experiment stopped as a whole, its state kept for --resume
    │   ├── BackendFailedError    a backend failed its start-up probe, failed a call for good, tripped
    │   │                         a breaker, answered a request it will never accept (4xx), or a
    │   │                         run's decisions are mostly fallbacks: exit 3
    │   └── BudgetExhausted       --max-calls / --max-cost would be passed by the next request: exit 4
    └── BackendError              a language-model call failed (raised by backends, handled by retries)

    KeyboardInterrupt
    └── ExperimentInterrupted     `agentsim.run` stopped by an interrupt (Ctrl-C, Jupyter's Interrupt):
                                  the runs recorded it; the message says where (agentsim.open(DIR))

Messages never contain API keys or auth headers: backends build them from status codes and
error kinds, not from request objects.
"""

from __future__ import annotations

EXIT_USER_ERROR = 2  # the exit status of a UserError, from `python -m agentsim` and its subcommands


class AgentsimError(Exception):
    """Base class of every error agentsim raises on purpose."""


class UserError(AgentsimError):
    """An error the user caused and can fix; its message names the fix in one line."""


class ParameterError(UserError):
    """A scenario parameter that is unknown, of the wrong type, or impossible."""


class ArgumentError(UserError, TypeError):
    """An argument of the Python API of the wrong type (`agentsim.run(options='x')`,
    `PopulationModel('x')`): its message names the argument and what it takes. A `TypeError`
    too, as Python's own checks raise."""


class ScenarioFileError(UserError):
    """A scenario file that is missing, fails to import, or defines no scenario."""


class BackendSpecError(UserError):
    """A backend spec that names no known provider or lacks what the provider needs."""


class BackendAuthError(UserError):
    """A server refused the credentials: every further call would fail the same way."""


class UnfitModelError(UserError):
    """A model that cannot play the scenario as configured (its replies cannot be read, or a
    shortcut it cannot support was asked for): stopped before any run starts."""


class ReplayMissError(UserError):
    """`--replay` asks for exact reproduction from the cache, and a request is not in it."""


class OutputDirError(UserError):
    """An output directory that would mix or overwrite experiments."""


class DamagedStoreError(UserError):
    """An output directory whose database or checkpoint is truncated, corrupted or not agentsim's."""


class RunStopped(AgentsimError):
    """Every run of the experiment stops: not a wrong input, but a condition the user must
    act on (fix the server, raise the budget). Runs keep their open encounters' state, so
    `--resume` continues exactly. `status` is what the runs table records, `reason` the
    stop reason, `exit_code` what the command line returns."""

    status = "failed"
    reason = "error"
    exit_code = 1


class BackendFailedError(RunStopped):
    """A backend that cannot serve the run: failed probe, a call failed for good, tripped
    breaker, a fatal 4xx, or a run whose decisions are mostly fallbacks (`fallbacks`: then
    the runs commit nothing more, so that a resume asks those decisions again)."""

    status = "failed"
    reason = "backend_failed"
    exit_code = 3

    def __init__(self, message: str, *, fallbacks: bool = False) -> None:
        super().__init__(message)
        self.fallbacks = fallbacks


class BudgetExhausted(RunStopped):
    """The next request would pass --max-calls or --max-cost: it is not sent."""

    status = "stopped"
    exit_code = 4

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class BackendError(AgentsimError):
    """A language-model call that failed; `kind` says how, for retries and accounting.

    Kinds: rate_limited (429), overloaded (529, TGI's overloaded 429), server (5xx),
    timeout, connection (refused or dropped), malformed (a body that is not the JSON promised),
    bad_request (4xx a retry cannot fix), error (anything else)."""

    RETRYABLE = frozenset({"rate_limited", "overloaded", "server", "timeout", "connection", "malformed"})
    failed_attempts: tuple[str, ...] = ()  # the kinds of the attempts retried before this one gave up

    def __init__(self, message: str, *, kind: str = "error", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in self.RETRYABLE


class ExperimentInterrupted(KeyboardInterrupt):
    """`agentsim.run(...)` interrupted (Ctrl-C in a script, Interrupt in Jupyter): the runs
    stopped as the command line's do on Ctrl-C (no request after, the budget spends no more)
    and recorded what they played. A KeyboardInterrupt still, so that whatever stops on an
    interrupt stops; `out` is the output directory, which its message names."""

    def __init__(self, out: str) -> None:
        super().__init__(f"interrupted; everything recorded so far is in {out}: agentsim.open({out!r}) reads it, "
                         f"agentsim.run(..., out={out!r}, resume=True) continues it")
        self.out = out
