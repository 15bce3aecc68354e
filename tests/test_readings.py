"""The game layer's readers never take an echo or an article for a choice: a one-letter option
counts only where it stands alone, a number copied from the question is no answer, a reply
committing to two different numbers is asked again, and a fallback is told to the player as
played for it, not as its own choice (agentsim/gamekit/choices.py, docs/games-layer.md)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agentsim.gamekit import Game, GameParams, Number, Options, Round
from agentsim.gamekit.asking import Ask, KitCodec
from agentsim.llm.base import Completion, Request
from agentsim.model import BackendShare, PopulationModel

BID = "Round 1 of 3: Your value for this round's item is 69. What do you bid?"


def test_a_one_letter_option_is_read_only_where_it_stands_alone() -> None:
    sides = Options("A", "B")
    assert sides.read("I choose a side: B") == ("B", None)  # "a" is the article
    assert sides.read("A side it is: B") == ("B", None)
    assert sides.read("I pick B") == ("B", None)
    assert sides.read("A.") == ("A", None) and sides.read("Option A") == ("A", None) and sides.read("b") == ("B", None)
    assert sides.read("**A**") == ("A", None) and sides.read("My answer: A, final.") == ("A", None)
    assert sides.read("A or B")[0] is None, "two options named alone: asked again"
    pronoun = Options("I", "J")
    assert pronoun.read("I think J") == ("J", None) and pronoun.read("I'll say J.") == ("J", None)
    assert Options("go", "stay").read("I go to the bar") == ("go", None), "longer labels read as before"


def test_a_number_copied_from_the_question_is_no_answer() -> None:
    bid = Number(0, 200)
    action, problem = bid.read("Round 1 of 3: Your value for this round's item is 69.", BID)
    assert action is None and problem == "names no number of its own (it repeats the question's)"
    assert bid.read("Round 1 of 3: I bid 40.", BID) == ("40", None)
    assert bid.read("My value is 69, so I bid 50.", BID) == ("50", None)
    assert bid.read("69", BID) == ("69", None), "a number alone is the reply's own"
    assert bid.read("I bid 69.", BID) == ("69", None), "a number the reply commits to is its own"
    assert bid.read("Round 1 of 3: Your value for this round's item is 69.") == ("69", None), \
        "without the question nothing is an echo"


def test_two_committed_numbers_are_asked_again() -> None:
    offer = Number(0, 10)
    action, problem = offer.read("I offer 4 and keep 6.")
    assert action is None and problem == "commits to several numbers: 4, 6"
    assert offer.read("I bid 50, my value is 69.".replace("50", "5").replace("69", "9")) == ("5", None), \
        "a commitment before a mere mention: the commitment, not the number at the end"
    assert offer.read("Of my 10 tokens I give 4") == ("4", None)
    assert offer.read("2 out of 7, or maybe 3") == ("3", None), "none committed: still the number it ends with"
    assert offer.read("Between 3 and 5, say.")[0] is None


def test_the_codec_reads_a_reply_against_its_own_question() -> None:
    ask = Ask("auction", "choose", 1, "Player 1", Number(0, 200), "You bid in an auction.", BID)
    assert KitCodec().parse("Your value for this round's item is 69.", ask).action is None
    assert KitCodec().parse("I bid 60.", ask).action == "60"


@dataclass(frozen=True, kw_only=True)
class _Params(GameParams):
    agents: int = 2
    max_rounds: int = 2
    max_reasks: int = 0


class _Guess(Game[_Params]):
    name = "guess"
    Params = _Params
    question = "Round {round}: pick a number."

    def choice(self, player):  # type: ignore[no-untyped-def]
        return Number(1, 9)

    def outcome(self, round: Round) -> None:
        for player in round.players:
            round.pay(player, 1)


class _Mumbles:
    """Player 1 never answers with a number; player 2 answers 3."""

    name = "mumbles"
    immediate = True

    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        return Completion(text="Hmm." if request.situation.player == "Player 1" else "3")

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("conversation", [False, True])
def test_a_fallback_is_told_as_played_for_the_player(conversation: bool) -> None:
    backend = _Mumbles()
    model = PopulationModel(_Guess(conversation=conversation), seed=1, backends=[BackendShare(backend)])
    model.step()
    model.step()
    second = [request for request in backend.requests if request.situation.round == 2]
    mine = next(request for request in second if request.situation.player == "Player 1")
    theirs = next(request for request in second if request.situation.player == "Player 2")
    shown = "\n".join(message.content for message in mine.messages)
    played = model.state.history[0][0][1]
    assert "was played for you" in played and "You chose" not in played
    assert "was played for you" in shown and "You chose" not in shown
    assert "You chose 3." in "\n".join(message.content for message in theirs.messages)
    if conversation:  # its own turn in the conversation is what it wrote, not the number played for it
        assert [message.content for message in mine.messages if message.role == "assistant"] == ["Hmm."]
