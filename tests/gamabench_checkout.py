"""A small GAMA-Bench checkout written for the tests in its formats, never its texts (GAMA-Bench
is GPL-3.0): `prompt_template/GAME/KIND_v1.txt` (a comment, the marker line, the text with
`!<INPUT k>!` inputs and `<part>///</part>` between a report's messages) and `games/GAME.py`,
runner files whose methods assign the sentences agentsim reads (`output_format` in `start`,
`won_msg` in `report_result`, ...) under the names and in the order GAMA-Bench's runner has
them. The wording is the tests' own."""

from __future__ import annotations

import textwrap
from pathlib import Path

MARKER = "<commentblockmarker>###</commentblockmarker>"
PART = "<part>///</part>"

TEMPLATES = {
    "guessing_game": {
        "description": "!<INPUT 5>!\n\n!<INPUT 0>! players, !<INPUT 1>! rounds: pick from !<INPUT 2>! to !<INPUT 3>!; "
                       "nearest !<INPUT 4>! of the mean wins.",
        "request": "Round !<INPUT 0>! begins. Aim for !<INPUT 1>! of the mean.\n\n!<INPUT 4>!",
        "report": f"Round !<INPUT 0>!: mean !<INPUT 1>!, target (!<INPUT 2>!) !<INPUT 3>!, winner !<INPUT 4>!.\n"
                  f"Yours:\n{PART}\n{{\"chosen_number\": \"!<INPUT 5>!\"}}\n{PART}\n!<INPUT 6>!.",
    },
    "bar_game": {
        "description": "!<INPUT 6>!\n\n!<INPUT 0>! players, !<INPUT 1>! rounds. Up to !<INPUT 2>! go: !<INPUT 3>!, "
                       "more: !<INPUT 4>!; home: !<INPUT 5>!.",
        "request": "Round !<INPUT 0>!. Capacity !<INPUT 1>!.\n\n!<INPUT 2>!",
        "report_explicit": f"Round !<INPUT 0>!: !<INPUT 1>! went, !<INPUT 2>! stayed, of !<INPUT 3>!: !<INPUT 4>! "
                           f"than !<INPUT 6>!, !<INPUT 5>! fun.\nYours:\n{PART}\n{{\"decision\": \"!<INPUT 7>!\"}}\n"
                           f"{PART}\nYou got !<INPUT 8>!.",
        "report_implicit": f"Round !<INPUT 0>!.\nYours:\n{PART}\n{{\"decision\": \"!<INPUT 1>!\"}}\n{PART}\n"
                           f"You got !<INPUT 2>!.",
    },
    "divide_dollar": {
        "description": "!<INPUT 3>!\n\n!<INPUT 0>! players, !<INPUT 1>! rounds, !<INPUT 2>! golds.",
        "request": "Round !<INPUT 0>!: ask for part of !<INPUT 1>!.\n\n!<INPUT 2>!",
        "report": f"Round !<INPUT 0>!.\nYours:\n{PART}\n{{\"bid_amount\": \"!<INPUT 1>!\"}}\n{PART}\nSum !<INPUT 2>!, "
                  f"it !<INPUT 3>! !<INPUT 4>!; you got !<INPUT 5>!.",
    },
    "public_goods": {
        "description": "!<INPUT 3>!\n\n!<INPUT 0>! players, !<INPUT 1>! rounds, the pot times !<INPUT 2>!.",
        "request": "Round !<INPUT 0>!: you hold !<INPUT 1>!.\n\n!<INPUT 2>!",
        "report": f"Round !<INPUT 0>!: all gave !<INPUT 1>!.\nYours:\n{PART}\n{{\"tokens_contributed\": \"!<INPUT 2>!\"}}"
                  f"\n{PART}\nPot !<INPUT 3>!, gain !<INPUT 4>!, now !<INPUT 5>!; all: !<INPUT 6>!.",
    },
    "diner_dilemma": {
        "description": "!<INPUT 6>!\n\n!<INPUT 0>! diners, !<INPUT 1>! rounds: costly !<INPUT 2>!/!<INPUT 3>!, cheap "
                       "!<INPUT 4>!/!<INPUT 5>!.",
        "request": "Round !<INPUT 0>!: order.\n\n!<INPUT 1>!",
        "report": f"Round !<INPUT 0>!: !<INPUT 1>! costly, !<INPUT 2>! cheap; bill !<INPUT 3>!, you pay !<INPUT 4>!.\n"
                  f"Yours:\n{PART}\n{{\"chosen_dish\": \"!<INPUT 5>!\"}}\n{PART}\nWorth: !<INPUT 6>!.",
    },
    "sealed_bid_auction": {
        "description": "!<INPUT 3>!\n\n!<INPUT 0>! bidders, !<INPUT 1>! rounds; the winner pays the !<INPUT 2>!.",
        "request": "Round !<INPUT 0>!: the item is worth !<INPUT 1>! to you.\n\n!<INPUT 2>!",
        "report": f"Round !<INPUT 0>!: worth !<INPUT 1>!.\nYours:\n{PART}\n{{\"bid\": \"!<INPUT 2>!\"}}\n{PART}\n"
                  f"Top bid !<INPUT 3>!, paid !<INPUT 4>!. You !<INPUT 5>!: !<INPUT 6>!.",
    },
    "battle_royale": {
        "description": "!<INPUT 5>!\n\n!<INPUT 0>! shooters: !<INPUT 1>!. You: !<INPUT 2>!, !<INPUT 3>!%, "
                       "!<INPUT 4>!-th.",
        "request": "Round !<INPUT 0>!: still in !<INPUT 1>!. You: !<INPUT 2>!, !<INPUT 3>!%, !<INPUT 4>!-th.\n\n"
                   "!<INPUT 5>!",
        "report": "Round !<INPUT 0>!: !<INPUT 1>! !<INPUT 2>!\n!<INPUT 3>! left.",
        "report2": f"Round !<INPUT 0>!.\nYours:\n{PART}\n{{\"action\": \"!<INPUT 1>!\", \"target\": \"!<INPUT 2>!\"}}\n"
                   f"{PART}\n!<INPUT 3>!\n!<INPUT 4>! left.",
    },
    "pirate_game": {
        "description": "!<INPUT 3>!\n\n!<INPUT 0>! pirates, !<INPUT 1>! coins; you rank !<INPUT 2>!.",
        "request1": "Pirate !<INPUT 0>! proposes !<INPUT 1>!; yours: !<INPUT 2>!.\n\n!<INPUT 3>!",
        "request2": "You, pirate !<INPUT 0>!, split !<INPUT 1>!.\n\n!<INPUT 2>!",
        "report": f"The !<INPUT 0>! pirate proposed !<INPUT 1>!; !<INPUT 2>! of !<INPUT 3>! for.\nYours:\n{PART}\n"
                  f"{{\"decision\": \"!<INPUT 4>!\"}}\n{PART}\n!<INPUT 5>! than half.\n!<INPUT 6>!",
    },
}

# The runner's own sentences, under the names and in the order its methods assign them.
RUNNERS = {
    "guessing_game": '''
        class GuessingGame:
            def report_result(self, round_record):
                won_msg = "Won" if won else "Lost"

            def start(self, round):
                if self.cot:
                    output_format = f'{cot_msg} Then JSON: {{"explanation": "why", "chosen_number": "{self.min}..{self.max}"}}'
                else:
                    output_format = f'JSON: {{"chosen_number": "{self.min}..{self.max}"}}'
                if parsered_responses > self.max or parsered_responses < self.min:
                    pass
        ''',
    "bar_game": '''
        class BarGame:
            def report_result(self, round_record):
                number_msg = "at most" if round_record["winner"] == "go" else "over"
                fun_msg = "more" if round_record["winner"] == "go" else "less"

            def start(self, round):
                if self.cot:
                    output_format = f'{cot_msg} JSON: {{"explanation": "why", "decision": "go_or_stay"}}'
                else:
                    output_format = f'JSON: {{"decision": "go_or_stay"}}'
        ''',
    "divide_dollar": '''
        class DivideDollar:
            def report_result(self, round_record):
                round_msg = 'fits' if won else 'overflows'

            def start(self, round):
                if self.cot:
                    output_format = f'{cot_msg} JSON: {{"explanation": "why", "bid_amount": "0..{self.golds}"}}'
                else:
                    output_format = f'JSON: {{"bid_amount": "0..{self.golds}"}}'
        ''',
    "public_goods": '''
        class PublicGoods:
            def start(self, round):
                if self.cot:
                    output_format = f'{cot_msg} JSON: {{"explanation": "why", "tokens_contributed": "0..{player.tokens[-1]}"}}'
                else:
                    output_format = f'JSON: {{"tokens_contributed": "0..{player.tokens[-1]}"}}'
        ''',
    "diner_dilemma": '''
        class DinerDilemma:
            def report_result(self, round_record):
                player_revenue_msg = f'{player_utility} - {round_record["total_cost"]}/{self.player_num} = {player_revenue:.2f}'

            def start(self, round):
                if self.cot:
                    output_format = f'{cot_msg} JSON: {{"explanation": "why", "chosen_dish": "costly_or_cheap"}}'
                else:
                    output_format = f'JSON: {{"chosen_dish": "costly_or_cheap"}}'
        ''',
    "sealed_bid_auction": '''
        class SealedBidAuction:
            def report_result(self, round_record):
                result = 'won' if round_record["bid_winner"] == player.id else 'lost'

            def start(self, round):
                if self.cot:
                    output_format = f'{cot_msg} JSON: {{"explanation": "why", "bid": "0..{player.valuation[-1]}"}}'
                else:
                    output_format = f'JSON: {{"bid": "0..{player.valuation[-1]}"}}'
        ''',
    "battle_royale": '''
        class BattleRoyale:
            def player_info_str_print(self):
                players_list.append({f"shooter {self.ordinal(player_index)}": player.id, "rate": f"{hit_rate}%"})

            def report_result(self, round_record):
                result = ""
                result2 = ""
                if round_record["action"] == "miss":
                    result = 'held fire.'
                    result2 = 'You held fire.'
                else:
                    result = f'fired at player_{round_record["shot_player"]}'
                    result2 = f'You fired at player_{round_record["shot_player"]}'
                    if round_record["out"]:
                        result += f', a hit: player_{round_record["shot_player"]} is out.'
                        result2 += f', a hit: player_{round_record["shot_player"]} is out.'
                    else:
                        result += ", a miss."
                        result2 += ", a miss."

            def start(self, round):
                if self.cot:
                    output_format = f'{cot_msg} JSON: {{"explanation": "why", "action": "shoot_or_miss", "target": "id_or_null"}}'
                else:
                    output_format = f'JSON: {{"action": "shoot_or_miss", "target": "id_or_null"}}'
        ''',
    "pirate_game": '''
        class PirateGame:
            def report_result(self, gold_distribution):
                if accepting_rate >= 0.5:
                    majority = 'At least'
                else:
                    majority = "Less"
                if mine and passed:
                    result = f'Your plan passed; you get {gold_distribution[count]}.'
                elif passed:
                    result = f'The {self.player_id_manipulation(self.current_round)} plan passed; you get {gold_distribution[count]}.'
                elif mine:
                    result = f'Your plan failed: you are out.'
                else:
                    result = f'The {self.player_id_manipulation(self.current_round)} pirate is out.'

            def start(self, round):
                if self.cot:
                    output_format = '{{"explanation": "why", "proposal": {{"{g_input_0}-th": "g", "{g_input_2}-th": "g"}}}}'.format(
                        g_input_0=g_input_0, g_input_2=g_input_2, cot_msg=cot_msg)
                else:
                    output_format = f'JSON: {{"proposal": {{"{g_input_0}-th": "g", ..., "{g_input_2}-th": "g"}}}}'
                if self.cot:
                    output_format = f'{cot_msg} JSON: {{"explanation": "why", "decision": "accept_or_reject"}}'
                else:
                    output_format = f'JSON: {{"decision": "accept_or_reject"}}'
        ''',
}


def write_checkout(root: Path) -> Path:
    """The checkout under `root`; returns its prompt_template/ folder."""
    templates = root / "prompt_template"
    for game, kinds in TEMPLATES.items():
        (templates / game).mkdir(parents=True, exist_ok=True)
        for kind, text in kinds.items():
            (templates / game / f"{kind}_v1.txt").write_text(f"{game} {kind}, the tests' own words\n\n{MARKER}\n\n{text}\n",
                                                             encoding="utf-8")
    for folder, name, text in (("cot_prompts", "cot1", "Think it through."), ("role_prompts", "role1", "You are kind.")):
        (templates / folder).mkdir(parents=True, exist_ok=True)
        (templates / folder / f"{name}.txt").write_text(f"{name}\n\n{MARKER}\n\n{text}\n", encoding="utf-8")
    (root / "games").mkdir(parents=True, exist_ok=True)
    for game, source in RUNNERS.items():
        (root / "games" / f"{game}.py").write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return templates
