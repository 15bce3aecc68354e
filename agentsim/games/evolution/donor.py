"""The Donor game (Vallinder and Hughes 2024), as Liu plays it over generations.

Pairing is Vallinder and Hughes's `bipartiteRoundRobin` followed by `extendRounds`: the
population is split at random into halves A and B; in round i < N/2 the j-th of A meets the
(j - i)-th of B (B rotating around A), A donating in even rounds and B in odd ones; rounds
N/2 .. N-1 replay those rounds with the roles reversed. So a game of N rounds (N agents)
meets every ordered donor -> recipient pair across the halves exactly once (`rounds` beyond N
start the schedule again). The second game replays the first's rounds with the roles
reversed. Every game starts from the endowment and with no reputation.

The reputation chain: when D gives to R, D's chain becomes R's chain followed by what D did.
A donor paired with A sees the last `trace_length` entries of A's chain, newest first: what
A did in its last round as donor, what A's recipient then had done before, and so on. That is
all it sees of A (not A's earlier rounds).

Scoring fixes the original code's two mistakes (REFERENCE.md): an agent's score is the mean
of its final resources in both games (the original counted one game twice), and punishment
takes the punished units away (the original's branch never ran). An answer that cannot be
read after the re-asks is a recorded fallback: the donor gives nothing, the chain shows 0%,
and the donation is left out of the donation fraction.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from ...codec import Parsed
from ...llm.base import Grammar
from ...parts import StandInPart
from ...records import Decision, EncounterRecord, Move
from . import prompts
from .codec import EvolutionCodec
from .game import CulturalEvolution
from .params import DonorParams
from .parsers import donation_amount, parse_donation
from .population import EvolutionAgent, Phase
from .prompts import DonorView, Situation
from .standin import EvolutionStandIn

if TYPE_CHECKING:
    from ...model import PopulationModel
    from ...scheduler import Encounter

_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def chain_shown(trace: list[str], length: int) -> str:
    """What a donor sees of a recipient: the last `length` entries of its chain, newest first."""
    return " ".join(reversed(trace[-length:]))


def round_robin(order: list[int], round_: int, *, reversed_roles: bool = False) -> list[tuple[int, ...]]:
    """Round `round_`'s (donor, recipient) pairs: Vallinder and Hughes's bipartite round robin
    (roles toggling every round), then the same rounds with the roles reversed."""
    half = len(order) // 2
    group_a, group_b = order[:half], order[half:]
    rotation = round_ % half
    pairs: list[tuple[int, ...]] = [(group_a[j], group_b[(j - rotation) % half]) for j in range(half)]
    flips = rotation % 2 + (round_ // half) % 2 + reversed_roles
    return [(b, a) for a, b in pairs] if flips % 2 else pairs


class DonorGame(CulturalEvolution[DonorParams]):
    name: ClassVar[str] = "donor_game"
    Params = DonorParams
    game_label: ClassVar[str] = "Donor game"

    def standin_part(self) -> StandInPart:
        return StandInPart(rules=[EvolutionStandIn(self.standin, donor=True, punishment=self.params.punishment)])

    @cached_property
    def codec(self) -> DonorCodec:
        return DonorCodec(self.params)

    # --- a game ---------------------------------------------------------------------------
    def game_order(self, model: PopulationModel, game: int, previous: list[int]) -> list[int]:
        if game > 0:
            return previous  # the second game replays the pairs, roles reversed
        order = list(range(self.params.agents))
        model.random.shuffle(order)
        return order

    def round_groups(self, order: list[int], phase: Phase) -> list[tuple[int, ...]]:
        return round_robin(order, phase.round, reversed_roles=phase.game % 2 == 1)

    def reset_game(self, agent: EvolutionAgent) -> None:
        agent.payoff = self.params.endowment
        agent.trace = [f"{agent.name} did not have any previous interactions."]

    def game_view(self, model: PopulationModel, encounter: Encounter, phase: Phase) -> DonorView:
        donor, recipient = encounter.agents
        assert isinstance(donor, EvolutionAgent) and isinstance(recipient, EvolutionAgent)
        return DonorView(donor.name, phase.generation, phase.game + 1, phase.round + 1, donor.strategy, donor.norms,
                         donor.payoff, recipient.name, recipient.payoff,
                         chain_shown(recipient.trace, self.params.trace_length))

    async def play_round(self, model: PopulationModel, encounter: Encounter) -> Decision:
        return await encounter.agents[0].astep(encounter.views)

    def resolve_round(self, model: PopulationModel, encounter: Encounter, answers: Any, phase: Phase) -> EncounterRecord:
        decision: Decision = answers
        donor, recipient = encounter.agents
        assert isinstance(donor, EvolutionAgent) and isinstance(recipient, EvolutionAgent)
        params, round_ = self.params, phase.round + 1
        kind, amount = donation_amount(decision.action) if decision.action is not None else ("donate", 0.0)
        held = donor.payoff
        fraction = amount / held if held > 0 else None
        before = recipient.payoff
        if kind != "refuse" and amount > held + 1e-9:
            # Vallinder and Hughes: more than the donor holds is "an invalid action": nothing
            # moves and no entry is written; the donor's chain is the recipient's, copied before
            # the pairing from the second round on (Donor_Game_with_Cultural_Evolution.ipynb:539-555, 627)
            if phase.round > 0:
                donor.trace = list(recipient.trace)
            model.metrics.donation("invalid", None, decision.fallback)
            return EncounterRecord(encounter.t, encounter.round, 0, [Move(donor.index, decision.action, 0.0),
                                                                    Move(recipient.index, None, 0.0)], decision.calls)
        if kind == "refuse":
            entry = f"In round {round_}, {donor.name} refused to play with {recipient.name}."
        elif kind == "punish":
            donor.payoff -= amount
            recipient.payoff = max(0.0, recipient.payoff - params.punishment_loss * amount)
            entry = (f"In round {round_}, {donor.name} punished {recipient.name} by spending {amount:g} units "
                     f"to take away {params.punishment_loss * amount:g} units from their resources.")
        else:
            donor.payoff -= amount
            recipient.payoff += params.cooperation_gain * amount
            entry = (f"In round {round_}, {donor.name} donated {fraction * 100:.2f}% of their resources to {recipient.name}."
                     if fraction is not None else f"In round {round_}, {donor.name} had no resources to give to {recipient.name}.")
        donor.trace = [*recipient.trace, entry]
        model.metrics.donation(kind, fraction, decision.fallback)
        moves = [Move(donor.index, decision.action, donor.payoff - held),
                 Move(recipient.index, None, recipient.payoff - before)]
        return EncounterRecord(encounter.t, encounter.round, int(kind == "donate" and amount > 0), moves, decision.calls)


class DonorCodec(EvolutionCodec):
    """The donor game's words: the system prompt with its information and punishment clauses,
    the strategy brief, a donor's turn, its reading and its reminder."""

    params: DonorParams

    def __init__(self, params: DonorParams) -> None:
        self.params = params

    def system_prompt(self, norms: str) -> str:
        params = self.params
        return prompts.DONOR_SYSTEM.format(norms_block=self.norms_block(norms), endowment=params.endowment,
                                           gain=params.cooperation_gain, information=self._information(),
                                           punishment=self._punishment())

    def _information(self) -> str:
        return prompts.DONOR_INFORMATION.format(depth=_WORDS.get(self.params.trace_length, str(self.params.trace_length)))

    def _punishment(self) -> str:
        return prompts.PUNISHMENT_SYSTEM[self.params.punishment].format(loss=self.params.punishment_loss)

    def strategy_brief(self) -> str:
        return self._information() + prompts.DONOR_BRIEF.format(punishment=self._punishment())

    def _answer(self, view: DonorView) -> tuple[str, str]:
        params, punishment = self.params, self.params.punishment
        fields = {"resources": view.resources, "gain": params.cooperation_gain, "loss": params.punishment_loss,
                  "recipient": view.recipient}
        return prompts.DONOR_ANSWER[punishment].format(**fields), prompts.DONOR_ANSWER_AGAIN[punishment].format(**fields)

    def turn_prompt(self, view: Situation) -> str:
        assert isinstance(view, DonorView)
        answer, again = self._answer(view)
        return prompts.DONOR_TURN.format(name=view.name, strategy=view.strategy, generation=view.generation,
                                         round=view.round, recipient=view.recipient,
                                         recipient_resources=view.recipient_resources, chain=self._chain(view),
                                         resources=view.resources, answer=answer, answer_again=again,
                                         probabilities=prompts.PROBABILITIES)

    def turn_grammar(self, view: Situation) -> Grammar:
        """The answer alone, in the words the prompt asks for: a number (up to four digits and
        two decimals, as the notebook reads it; more than the donor holds stays possible, an
        invalid action), "Donate, x" or "Punish, x", or "Refuse to play". With
        `bounded_donations` (agentsim's setting: the notebook constrains nothing) the amount is
        at most what the donor holds. Free numbers have no exact distribution. Plain groups and
        classes: llama.cpp's GBNF takes no other syntax."""
        assert isinstance(view, DonorView)
        amount = amount_up_to(view.resources) if self.params.bounded_donations else "[0-9]{1,4}([.][0-9]{1,2})?"
        answer = {"none": amount, "costly": f"(Donate|Punish), {amount}",
                  "partner_choice": f"(Refuse to play|{amount})"}[self.params.punishment]
        return Grammar(kind="regex", value=f"Answer: {answer}")

    def _chain(self, view: DonorView) -> str:
        if self.params.chain_prefix:
            return prompts.CHAIN_PREFIX.format(recipient=view.recipient) + view.chain
        return view.chain

    def parse_turn(self, text: str, view: Situation) -> Parsed:
        assert isinstance(view, DonorView)
        return parse_donation(text, view.resources, self.params.punishment, self.params.donation_reader)

    def remind_turn(self, view: Situation, parsed: Parsed) -> str:
        assert isinstance(view, DonorView)
        return prompts.REMIND_DONOR.format(problem=parsed.problem, answer=self._answer(view)[0])


def amount_up_to(limit: float) -> str:
    """A regex for the amounts from 0 to `limit` (cents cut off), written with at most two
    decimals and no leading zeros: what a donor holding `limit` can give."""
    cents = max(0, math.floor(limit * 100 + 1e-9))
    whole, rest = divmod(cents, 100)
    tenths, hundredths = divmod(rest, 10)
    decimals = [f"[0-{tenths}]"] + ([f"[0-{tenths - 1}][0-9]"] if tenths else []) + [f"{tenths}[0-{hundredths}]"]
    alternatives = [f"{whole}([.]({'|'.join(decimals)}))?"]
    if whole:
        alternatives.insert(0, f"({_whole_numbers_up_to(whole - 1)})([.][0-9]{{1,2}})?")
    return "(" + "|".join(alternatives) + ")"


def _whole_numbers_up_to(limit: int) -> str:
    """A regex for the whole numbers 0 to `limit`, no leading zeros."""
    digits = str(limit)
    parts = ["[0-9]"] + [f"[1-9][0-9]{{{length - 1}}}" for length in range(2, len(digits))]
    if len(digits) == 1:
        return f"[0-{digits}]"
    for position, digit in enumerate(map(int, digits)):
        lowest = 1 if position == 0 else 0
        if digit > lowest:
            rest = len(digits) - position - 1
            parts.append(digits[:position] + f"[{lowest}-{digit - 1}]" + (f"[0-9]{{{rest}}}" if rest else ""))
    parts.append(digits)
    return "|".join(parts)
