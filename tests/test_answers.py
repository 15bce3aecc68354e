"""The answer parser reads the reply alone, on the replies models really give."""

from __future__ import annotations

import pytest

from agentsim.games.naming import NO_OPTION, SEVERAL, AnswerReader, parse_answer

LETTERS = ("F", "J", "M", "Q")


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("{'value': J; 'reason': 'Player 2 chose J last round'}", "J"),  # the asked-for format
        ("{'value': J; 'reas", "J"),  # cut by max_tokens
        ("{'value': 'Q'", "Q"),
        ('{"value": "M", "reason": "F failed twice"}', "M"),  # JSON, another option in the reason
        ("{'action': F; 'reason': 'stay'}", "F"),  # the narrative and bullet prompts' key
        ("{'value': <M>; 'reason': <it won>}", "M"),
        ("value: **Q**", "Q"),
        ("Answer = F", "F"),
        ("  {'value':  q ;", "Q"),  # case, in the field only
        ("J", "J"),
        ("**M**", "M"),
        ("'F'.", "F"),
        ("Player 1 should pick Q.", "Q"),  # free text naming one option
    ],
)
def test_reads_the_option_a_reply_names(reply: str, answer: str) -> None:
    assert parse_answer(reply, LETTERS) == (answer, None)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("{'value': <VALUE_OF_PLAYER_1>; 'reason': 'unsure'}", NO_OPTION),  # the placeholder echoed
        ("{'value': Z; 'reason': 'new'}", NO_OPTION),  # not in the pool
        ("{'value': None", NO_OPTION),
        ("I cannot decide without more information.", NO_OPTION),
        ("", NO_OPTION),
        ("{'value': M or Q; 'reason': 'either'}", SEVERAL),
        ('{"value": "F/J"}', SEVERAL),
        ("Either F or J would work here.", SEVERAL),
        ("q is fine", NO_OPTION),  # free text is read case-sensitively: 'q' is not Q
    ],
)
def test_rejects_replies_naming_no_option_or_several(reply: str, problem: str) -> None:
    assert parse_answer(reply, LETTERS) == (None, problem)


def test_never_reads_the_prompt_only_the_reply() -> None:
    # The papers' code searched prompt and reply together and returned the listed option.
    prompt_like = "pick an action from the following values: [F, J]"
    assert parse_answer("{'value': J", ("F", "J")).action == "J"
    assert parse_answer(prompt_like + " -> {'value': J", ("F", "J")).action == "J"


def test_longer_names_win_over_their_prefixes() -> None:
    reader = AnswerReader(["Al", "Alice", "Bob"])
    assert reader.parse("{'value': Alice; 'reason': 'x'}").action == "Alice"
    assert reader.parse("{'value': Al;").action == "Al"


def test_random_string_names() -> None:
    names = ("XtmT2C", "hsa1P6")
    assert parse_answer("{'value': hsa1P6; 'reason'", names).action == "hsa1P6"
    assert parse_answer("{'value': XtmT2", names).problem == NO_OPTION
