"""Exceptions as they cross between a Ray worker and the driver."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PortableError:
    """An exception as it crosses from worker to driver: its class and state, rebuilt there
    without calling its constructor (agentsim's errors take keyword-only arguments)."""

    kind: type[BaseException]
    message: str
    state: dict[str, Any]

    @classmethod
    def of(cls, error: BaseException) -> PortableError:
        state = {key: value for key, value in vars(error).items() if _picklable(value)}
        return cls(type(error), str(error), state)

    def rebuild(self) -> BaseException:
        error = self.kind.__new__(self.kind)
        BaseException.__init__(error, self.message)
        vars(error).update(self.state)
        return error


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True
