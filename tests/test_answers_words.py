"""Free text names an option only where it means the option: the pronoun "I" and the article
"A" in a real-looking reply are words, not answers (naming game and SIGN's decoder)."""

from __future__ import annotations

import pytest

from agentsim.games.naming.answers import NO_OPTION, SEVERAL, parse_answer
from agentsim.games.sign.schema import FreeTextDecoder

OPTIONS = ("I", "A", "M", "Q")


@pytest.mark.parametrize(("reply", "expected"), [
    ("I am not sure.", None),
    ("I am not sure which name to pick.", None),
    ("I'm not sure, but I'd go with M.", "M"),
    ("A good choice here would be Q, since my partner said it last time.", "Q"),
    ("I will say Q.", "Q"),
    ("I think A.", "A"),
    ("A is my choice.", "A"),
    ("My answer: I", "I"),
    ("**I**", "I"),
    ("{'value': 'I am not sure'}", None),
    ('{"value": "A", "reason": "I remember A winning"}', "A"),
    ("I choose A, not M.", None),  # two options named: unusable, as before
])
def test_pronoun_and_article_are_not_options(reply: str, expected: str | None) -> None:
    parsed = parse_answer(reply, OPTIONS)
    assert parsed.action == expected, parsed
    if expected is None:
        assert parsed.problem in (NO_OPTION, SEVERAL)


def test_i_am_not_sure_is_no_option_not_the_option_i() -> None:
    assert parse_answer("I am not sure.", OPTIONS).problem == NO_OPTION


def test_signs_decoder_reads_the_same_way() -> None:
    decoder = FreeTextDecoder(["A", "B", "I"])
    assert decoder.decode("I am not sure, a name like B maybe.") == "B"
    assert decoder.decode("I am not sure.") is None
    assert decoder.decode("A good name: I") == "I"
