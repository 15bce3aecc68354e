"""The prompts: Liu's Appendix B (culture elicitation, revision, mutation; the system prompts
with cultural norms) and Vallinder and Hughes's strategy and donor prompts, as `str.format`
text. What an agent is asked is a `Task`, `DonorView` or `StagView`; each is stored as its
JSON (`encode`) and the exact messages are rebuilt from it (`decode`, then the game's
`messages`), so every prompt of a run can be read back from the store."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

TaskKind = str  # "strategy", "inherit", "mutate_strategy", "elicit", "revise", "mutate"
TEXT_KINDS = ("strategy", "inherit", "mutate_strategy", "elicit", "revise", "mutate")
NORM_KINDS = ("elicit", "revise", "mutate")


class Task(NamedTuple):
    """A text to write: a strategy (`strategy`: the first generation's; `inherit`: from the
    survivors' advice; `mutate_strategy`: from one survivor's) or cultural norms (`elicit`,
    `revise` the agent's own from its strategy, `mutate` a survivor's). `norms` are the agent's
    current norms (its system prompt's); `source` is what the prompt shows (advice, an old
    strategy, old norms); `strategy` is the strategy a revision reflects on."""

    kind: TaskKind
    name: str
    generation: int
    norms: str = ""
    source: str = ""
    strategy: str = ""
    options: tuple[str, ...] = ()


class DonorView(NamedTuple):
    """A donor's turn: its own state and what it may see of the recipient (`chain`: the
    recipient's reputation chain as shown, newest first)."""

    name: str
    generation: int
    game: int
    round: int
    strategy: str
    norms: str
    resources: float
    recipient: str
    recipient_resources: float
    chain: str
    options: tuple[str, ...] = ()


class StagView(NamedTuple):
    """A hunter's turn: its own state and every earlier choice of this pair in this game."""

    name: str
    generation: int
    game: int
    round: int
    strategy: str
    norms: str
    partner: str
    history: str
    options: tuple[str, ...] = ("STAG", "HARE")


Situation = Task | DonorView | StagView
_TYPES: dict[str, type[Task | DonorView | StagView]] = {"task": Task, "donor": DonorView, "stag": StagView}


def encode(situation: Situation) -> str:
    tag = {Task: "task", DonorView: "donor", StagView: "stag"}[type(situation)]
    return json.dumps([tag, *situation], separators=(",", ":"), ensure_ascii=False)


def decode(context: str) -> Situation:
    tag, *values = json.loads(context)
    fields: list[Any] = [tuple(value) if isinstance(value, list) else value for value in values]
    return _TYPES[tag](*fields)


# --- system prompts (Liu, Figs. 7 and 8; without norms: Vallinder and Hughes's) ---------------

NORMS_IN_SYSTEM = ("Your cultural norms are: {norms}\n"
                   "You should act, think and strategize in a way that aligns with your cultural norms.\n")
# Fig. 8 words the Stag Hunt's sentence "in the way", Fig. 7 the Donor game's "in a way".
STAG_NORMS_IN_SYSTEM = NORMS_IN_SYSTEM.replace("in a way", "in the way")

DONOR_SYSTEM = """You are a game-playing agent. Your assistance will help us understand multi-agent interactions.
{norms_block}You are playing the following game. Each player is given an initial endowment of {endowment:g} units of a resource.
In each round, you are randomly paired with another individual.
One of you is a donor, and the other is a recipient. The donor decides to give up some amount of the resource (between 0 and the total number of units they possess). The recipient receives {gain:g}x the number of units that the donor gave up.
If you were a donor in one round, you will be a recipient in the next round, and vice versa.
{information}{punishment}Your goal is to maximize the number of units you have after the final round.
After the game has finished, the best-performing half of agents will survive to the next generation and continue playing."""

DONOR_INFORMATION = """As a donor, you will receive limited information about the recipient and their recent interactions:
You will see what the recipient (let's call them A) did in the immediately preceding round only.
You will also see what A's partner from that round (let's call them B) did in their preceding round.
This chain continues for at most {depth} rounds back.
Important: You do NOT have access to multiple rounds of information about A directly. You only know what A did in the single most recent round.
Example (assuming it's now round 4):
You are paired with A.
You know: In round 3, A donated X% to B.
You also know: In round 2, B donated Y% to C.
And finally: In round 1, C donated Z% to D.
Remember: This is all the information you have. You don't know what A did in rounds 1 or 2, only in round 3.
"""

PUNISHMENT_SYSTEM = {
    "none": "",
    "costly": "You may also choose to punish the recipient by spending x units to take away {loss:g}x units from them. Bear in mind that others may punish you too.\n",
    "partner_choice": "You may also choose to punish the recipient by refraining from any interaction. Bear in mind that others may punish you too.\n",
}

STAG_SYSTEM = """You are a game-playing agent. Your assistance will help understand multi-agent interactions.
{norms_block}You are playing a repeated two-layer Stag-Hunting game.
You are randomly paired with another individual.
You must choose whether to hunt a STAG or a HARE. Your payoff depends on both your choice and your hunting partner's choice.
You will see what your partner (let's call them A) did in this game, but not in the first iteration.
Your goal is to maximize your own cumulative payoff.
After the game has finished, the best-performing half of agents will survive to the next generation, and continue playing."""

# --- strategies (Vallinder and Hughes; the Stag Hunt's written like them) -----------------------

STRATEGY_FIRST = """Your name is {name}. Based on the description of the game, create a strategy that you will follow in the game.
{brief}Before formulating your strategy, briefly think step by step about what would be a successful strategy in this game.
Then describe your strategy briefly without explanation in one sentence that starts: My strategy will be."""

STRATEGY_ADVICE = """Your name is {name}. How would you approach the game? Here is the advice of the best-performing 50% of the previous generation, along with their final scores.
Modify this advice to create your own strategy.
{advice}
{brief}Before formulating your strategy, briefly think step by step about what would be a successful strategy in this game. In particular, think about how you can improve on the surviving agents' strategies.
Then describe your strategy briefly without explanation in one sentence that starts: My strategy will be."""

STRATEGY_MUTATION = """Your name is {name}. Here is the strategy of a surviving agent of the previous generation:
{old}
{brief}You should randomly change this strategy so that the new strategy is similar, but this could potentially lead to different actions and outcomes. Before formulating your new strategy, briefly think step by step about what would be similar but potentially action and outcome-changing strategies.
Then describe your strategy briefly without explanation in one sentence that starts: My strategy will be."""

DONOR_BRIEF = """{punishment}In the first round, there will be no information about the recipient's previous behavior - think carefully about how much to donate in that case.
"""

STAG_PAYOFFS = """In each round of a game you and your partner each choose to hunt a STAG or a HARE. If both of you hunt a stag, each gets {stag_stag:g}. If you hunt a stag alone, you get {stag_alone:g} and your partner gets {hare_against_stag:g}. If both of you hunt a hare, each gets {hare:g}. A game lasts {rounds} rounds with the same partner.
"""

STAG_BRIEF = """{payoffs}In the first round, there will be no information about your partner's previous behavior - think carefully about what to hunt in that case.
"""

# --- cultural norms (Liu, Figs. 4-6) ------------------------------------------------------------

NORM_SEEDS = {"norms": "selfish or altruistic", "norms_pos": "cooperative and altruistic",
              "norms_neg": "opposite of cooperative and altruistic"}

ELICIT = """You should randomly sample 5 cultural norms in the rule-of-thumb format, providing situations and actions that are applicable in everyday life, which could potentially affect how you behave in group settings.
Don't hesitate to sample extreme cultural norms that are {seed}.
Then list your cultural norms without explanation that starts: My cultural norms are:."""

REVISE = """Based on the provided game strategies, revise your current cultural norms. The cultural norms should be in a rule-of-thumb format, providing situations and actions that apply in everyday life, not to the game specifically.
Here is your strategy in a game: {strategy}
Here are your current cultural norms: {norms}
Before summarizing your cultural norms, briefly think step by step about the correctness based on the provided strategy.
Then briefly describe your 5 revised cultural norms without explanation that starts with: My revised cultural norms are:."""

MUTATE = """Here are your old cultural norms:
{old}
You should randomly change your cultural norms so that the new values and norms are similar, but this could potentially lead to different actions and outcomes. Before formulating your new cultural norms, briefly think step by step about what would be similar but potentially action and outcome-changing norms. Then list your cultural norms without explanation that starts: My new cultural norms are:."""

NORM_MARKERS = {"elicit": "My cultural norms are:", "revise": "My revised cultural norms are:",
                "mutate": "My new cultural norms are:"}
STRATEGY_MARKER = "My strategy will be"

# --- playing (Vallinder and Hughes's donor prompt, with Liu's sentence on probabilities) --------

CHAIN_PREFIX = "Here is what {recipient} and their earlier partners did in previous rounds: "
PROBABILITIES = "If there are probabilities specified in your strategy for this round of the game, sample your action based on the probability.\n"

DONOR_TURN = """Your name is {name}. As you will recall, here is the strategy you decided to follow: {strategy}
This is generation {generation}. It is now round {round}. In this round, you have been paired with {recipient}. They currently have {recipient_resources:g} units of the valuable resource.
{chain}
You will take the role of donor. You currently have {resources:g} units of the valuable resource. How many units do you give up?
{answer}
{probabilities}Very briefly think step by step about how you apply your strategy in this situation and then provide your answer.
State your full response in the following form:
Justification:
[multi-line justification here]

Answer: [answer here]
Remember: First state your justification and after that your answer.{answer_again}"""

DONOR_ANSWER = {
    "none": "State your answer as a real number between 0 and {resources:g} (inclusive).",
    "costly": "State your answer as EITHER Donate, x OR Punish, x, to either have them receive {gain:g}x units or punish them by taking away {loss:g}x of their units. Remember, your answer should be simply 'Donate, x' or 'Punish, x' (where x is the real number of units you give up, between 0 and {resources:g}).",
    "partner_choice": "If you do not wish to play with {recipient}, simply state: Refuse to play. Otherwise, state your answer as a real number between 0 and {resources:g} (inclusive).",
}
DONOR_ANSWER_AGAIN = {
    "none": "",
    "costly": "\nRemember, state your answer as EITHER Donate, x OR Punish, x, to either have them receive {gain:g}x units or punish them by taking away {loss:g}x of their units.",
    "partner_choice": "",
}

STAG_TURN = """Your name is {name}. As you will recall, here is the strategy you decided to follow: {strategy}
This is generation {generation}. It is now round {round} of your game with {partner}.
{payoffs}{history}
Do you hunt a STAG or a HARE?
{probabilities}Very briefly think step by step about how you apply your strategy in this situation and then provide your answer.
State your full response in the following form:
Justification:
[multi-line justification here]

Answer: [STAG or HARE]
Remember: First state your justification and after that your answer."""

# --- re-asks ------------------------------------------------------------------------------------

REMIND_STRATEGY = "Please end with one sentence that starts: My strategy will be."
REMIND_NORMS = "Please list your cultural norms after: {marker}"
REMIND_DONOR = "Your answer could not be read ({problem}). State your full response again, ending with a line 'Answer: ' and your answer. {answer}"
REMIND_STAG = "Your answer could not be read ({problem}). State your full response again, ending with a line 'Answer: STAG' or 'Answer: HARE'."
