"""Prompt templates read back what they render: the stand-in understands prompts this way, and
prompts rebuilt from the store are checked against what was sent."""

from __future__ import annotations

import random
import string

import pytest

from agentsim.prompts import PromptTemplate

BUILT_IN = [("naming", variant) for variant in ("standard", "narrative", "bullet")] + [
    ("sign", variant) for variant in ("nl", "nl_sw", "schema")]


def _fields(template: PromptTemplate, section: str) -> list[str]:
    return sorted({name for _, name, _, _ in string.Formatter().parse(template.sections[section]) if name})


@pytest.mark.parametrize(("game", "variant"), BUILT_IN)
def test_every_built_in_section_reads_back_what_it_rendered(game: str, variant: str) -> None:
    template = PromptTemplate.load(game, variant)
    rng = random.Random(variant)
    for section in template.sections:
        names = _fields(template, section)
        for _ in range(20):
            values = {name: "".join(rng.choice(string.ascii_letters + " ,[]\n") for _ in range(rng.randrange(1, 30)))
                      for name in names}
            text = template.render(section, **values)
            read = template.read(section, text)
            assert read is not None and template.render(section, **read) == text
            if names:
                wanted = (names[0],)
                assert template.read(section, text, only=wanted) == {names[0]: read[names[0]]}


def test_a_text_the_section_did_not_render_reads_as_none() -> None:
    template = PromptTemplate.parse("t", "[s]\nPick one of {options}. History:\n{history}It is round {round}.")
    assert template.read("s", "Pick one of [A, B]. History:\nIt is round 3.") == {"options": "[A, B]", "history": "",
                                                                                   "round": "3"}
    assert template.read("s", "Pick one of [A, B]. History:\nIt is round 3") is None  # the tail is missing
    assert template.read("s", "Choose one of [A, B]. History:\nIt is round 3.") is None  # the head differs
    assert template.read("s", "Pick one of [A, B] History:\nIt is round 3.") is None  # a literal is missing


def test_a_field_used_twice_must_read_the_same_both_times() -> None:
    template = PromptTemplate.parse("t", "[s]\nName: {name}. Again: {name}. End {tail}.")
    assert template.read("s", "Name: A. Again: A. End x.") == {"name": "A", "tail": "x"}
    assert template.read("s", "Name: A. Again: B. End x.") is None


def test_reading_random_templates_gives_back_what_rendered_them() -> None:
    """On random sections (quotes, braces and backslashes in literals, fields used twice) a
    rendered text reads back, field for field, for every choice of wanted fields."""
    rng = random.Random(7)
    pieces = ["Pick ", "'", '"', "\\", "{{", "}}", ": ", "\n", ". ", "value ", "x"]
    for _ in range(150):
        names = [rng.choice("abcd") for _ in range(rng.randrange(1, 6))]
        literals = ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4))) for _ in range(len(names) + 1)]
        if rng.random() < 0.3:
            literals[0] = ""
        if rng.random() < 0.3:
            literals[-1] = ""
        section = literals[0] + "".join(f"{{{name}}}{literal}" for name, literal in zip(names, literals[1:]))
        template = PromptTemplate.parse("t", "[s]\n" + section)
        values = {name: "".join(rng.choice("ABC ,[]") for _ in range(rng.randrange(0, 6))) for name in names}
        text = template.render("s", **values)
        whole = template.read("s", text)
        assert whole is not None and template.render("s", **whole) == text
        for wanted in (None, (names[0],), (names[-1],), tuple(set(names))):
            read = template.read("s", text, only=wanted)
            assert read == {name: value for name, value in whole.items() if wanted is None or name in wanted}, (section, text, wanted)


@pytest.mark.parametrize(("game", "variant"), [pair for pair in BUILT_IN if pair[0] == "naming"])
def test_findall_finds_every_entry_rendered_in_a_history(game: str, variant: str) -> None:
    """Every entry line is found, also in lines holding two entries, none, or debris."""
    template = PromptTemplate.load(game, variant)
    rng = random.Random(variant)
    for _ in range(200):
        lines, expected = [], []
        for _ in range(rng.randrange(0, 7)):
            shown = [(rng.choice("ABC"), rng.choice("ABC")) for _ in range(rng.choice((0, 1, 1, 1, 2)))]
            entries = [template.render("entry", round=rng.randrange(1, 6), own=own, partner=partner,
                                       payoff=rng.choice((100, -50))) for own, partner in shown]
            lines.append(rng.choice(("", "x ", "} ")).join(entries) + rng.choice(("", " trailing")))
            expected += shown
        text = "\n".join(lines)
        assert template.findall("entry", text, "own", "partner") == expected


def test_a_naming_history_renders_every_entry_it_is_given() -> None:
    """A memory longer than H (a probe's) still shows every entry, numbered in order, and
    reads back whole."""
    from agentsim.games.naming import NamingGame, NamingSituation

    game = NamingGame(agents=4, names=("A", "B"), memory_length=2)
    memory = (("A", "B", -50), ("B", "B", 100), ("A", "A", 100))
    for shown in (memory[:1], memory, memory[1:]):
        system = game.codec.messages(NamingSituation(("A", "B"), shown))[0].content
        entries = [game.template.render("entry", round=number, own=own, partner=partner, payoff=payoff)
                   for number, (own, partner, payoff) in enumerate(shown, start=1)]
        assert "\n".join(entries) in system
        assert game.template.findall("entry", system, "own", "partner") == [entry[:2] for entry in shown]
