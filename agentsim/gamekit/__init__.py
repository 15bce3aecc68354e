"""agentsim's game layer: a game in one short file (docs/games-layer.md).

    from agentsim.gamekit import Game, GameParams, Number, Options, Split, Target

A game subclasses `Game`: its parameters (a `GameParams` subclass), its `rules` and `question`
texts, what a player chooses (`choice`: `Options`, `Number`, `Split`, `Target`) and how a
round's outcome follows from the choices (`outcome`), or, for a sequential game (a proposer,
then a responder; players in turn, the same one again), the round itself (`play_round`, with
`Round.ask`). A `Game` holds only that; the engine wraps it (engine.py) and derives the prompt
codec (reading replies, re-asks, recorded fallbacks, a choice grammar, exact option
distributions), a stand-in rule, metrics, live figures, the report section, the DataFrames,
`transcript`, checkpoints and resume.

    choices.py       the kinds of choice: reading, writing, grammars, draws
    asking.py        Ask (what one player is asked) and KitCodec (the derived prompt codec)
    round.py         Round (one round at one table: ask, pay, tell, eliminate, win, record, end) and Player
    game.py          Game (what an author writes), GameParams, KitState
    engine.py        GameEngine: the Scenario that wraps a Game and runs it
    presentation.py  round lines for the store, the run summary, live figures, default feedback
    standin.py       the stand-in's rule

The family that registers the layer (its report section, the class its runs record) is
agentsim/games/gamekit.
"""

from .asking import Ask, KitCodec
from .choices import Choice, Number, Options, Split, Target
from .engine import GameEngine, engine_of  # (imported here, it tells the game module how a game is run)
from .game import Game, GameParams, KitStandInSettings, KitState
from .round import Player, Round

__all__ = ["Ask", "Choice", "Game", "GameEngine", "GameParams", "KitCodec", "KitStandInSettings", "KitState", "Number",
           "Options", "Player", "Round", "Split", "Target", "engine_of"]
