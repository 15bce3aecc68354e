"""JSON to and from model servers (agentsim/llm/wire.py): orjson, and what it refuses read and
written as the standard library does."""

from __future__ import annotations

import json
import math

import pytest

from agentsim.llm import wire


def test_bodies_mean_what_the_standard_library_would_have_sent() -> None:
    body = {"inputs": "Név: «Q» \u2014 round 3\n", "parameters": {"seed": 2**64 - 1, "temperature": 0.7, "stop": ["\n"]}}
    assert json.loads(wire.encode(body)) == body


def test_what_orjson_refuses_is_written_and_read_as_before() -> None:
    assert json.loads(wire.encode({"seed": 2**70})) == {"seed": 2**70}, "an integer past 64 bits"
    assert json.loads(wire.encode({1: "a"})) == {"1": "a"}, "a key that is not a string"
    logprobs = wire.decode(b'{"top_logprobs": [{"token": "Q", "logprob": -Infinity}, {"logprob": NaN}]}')
    assert logprobs["top_logprobs"][0]["logprob"] == -math.inf
    assert math.isnan(logprobs["top_logprobs"][1]["logprob"])


def test_a_body_that_is_not_json_is_a_value_error_or_none() -> None:
    with pytest.raises(ValueError):
        wire.decode(b"<html>502 Bad Gateway</html>")
    assert wire.decode_or_none(b"<html>502 Bad Gateway</html>") is None
    assert wire.decode_or_none(b'{"error": "overloaded"}') == {"error": "overloaded"}
