"""Parameters: `--set` text becomes the declared type, or a message saying what was expected."""

from __future__ import annotations

import pytest

from agentsim.errors import ParameterError
from agentsim.games.naming import NamingParams


def test_overrides_take_each_fields_type() -> None:
    params = NamingParams().with_overrides({
        "agents": "30", "names": "Q, M,F", "temperature": "0.7", "top_k": "none", "pairing": "rounds",
        "committed_name": "M", "prompt": "bullet",
    })
    assert (params.agents, params.names, params.temperature, params.top_k, params.pairing) == (30, ("Q", "M", "F"), 0.7, None, "rounds")
    assert params.committed_name == "M" and params.prompt == "bullet"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"agent": "3"}, "unknown parameter 'agent'"),
        ({"temperature": "hot"}, "temperature must be a number"),
        ({"top_k": "ten"}, "top_k must be a whole number"),
        ({"stop_at": "never"}, "stop_at must be one of consensus, flip, none"),
        ({"temperature": "-1"}, "temperature must be between 0 and 2"),
        ({"max_tokens": "0"}, "max_tokens must be >= 1"),
        ({"pool_size": "27"}, "more than 26 letters; use name_style=random"),
        ({"names": "Q,M", "pool_size": "3"}, "pool_size=3 does not apply"),
    ],
)
def test_bad_overrides_say_what_is_wrong(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        NamingParams().with_overrides(overrides)


def test_params_are_frozen_and_keyword_only() -> None:
    params = NamingParams()
    with pytest.raises(AttributeError):
        params.agents = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        NamingParams(24)  # type: ignore[misc]
