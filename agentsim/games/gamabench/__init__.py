"""GAMA-Bench's eight multi-player games (Huang et al. 2024, "How Far Are We on the
Decision-Making of LLMs?", arXiv:2403.11807): Guess 2/3 of the Average, El Farol Bar
(explicit and implicit), Divide the Dollar, Public Goods, Diner's Dilemma, Sealed-Bid Auction
(first and second price), Battle Royale and the Pirate Game; 10 players, 20 rounds.

    rules.py      each game's round outcome and payoffs, as plain functions of the choices
    scoring.py    GAMA-Bench's 0-100 score of a run, from its round records and parameters
    templates.py  reading the user's own copy of GAMA-Bench's prompt_template/ (five versions a game)
    importer.py   GAMA-Bench's raw_results/ JSON read into agentsim's store (JSON only, nothing executed)
    scores.py     the score table of a results directory: imported runs and agentsim runs alike
    report.py     the report section: scores by model and game, per-round outcomes
    commands.py   `python -m agentsim import gamabench RAW_DIR --out DIR`, `score DIR...` and `reenact`
    base.py       the base of the scenario files' games (scenarios/gamabench/*.py); `exact=true`: exact.py
    exact.py      GAMA-Bench-exact mode: each game played as GAMA-Bench's runner plays it (exact_reading.py:
                  its readers; checkout.py: its texts, read from the user's checkout; codec.py: its conversation)
    reenact.py    `reenact`: imported runs played again, GAMA-Bench-exact, compared reply by reply

Written from the paper and the formats (GAMA-Bench's repository is GPL-3.0; none of its code or
text is here): docs/reproducing-gamabench.md.
"""

from .. import Family, register_family

GAME_IDS = ("guessing_game", "bar_game", "divide_dollar", "public_goods", "diner_dilemma", "sealed_bid_auction",
            "battle_royale", "pirate_game")
SCENARIO_PREFIX = "gamabench_"

register_family(Family(
    name="gamabench",
    summary="GAMA-Bench's eight multi-player games, its scores and its published runs",
    scenario_names=tuple(SCENARIO_PREFIX + game for game in GAME_IDS),
    commands=f"{__name__}.commands",
    subcommands={"import-gamabench": "GAMA-Bench's raw_results/ JSON read into a results directory (import gamabench)",
                 "score": "GAMA-Bench's 0-100 score per model, game and prompt version (writes score.csv)",
                 "reenact": "imported GAMA-Bench runs played again in agentsim's games, GAMA-Bench-exact, and compared "
                            "reply by reply (writes reenact.csv)"},
    report_sections=(f"{__name__}.report",),
))
