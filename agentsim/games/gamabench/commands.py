"""GAMA-Bench's subcommands of `python -m agentsim` (declared in the family's `__init__`,
imported when one runs):

    import gamabench RAW_DIR --out DIR   GAMA-Bench's raw_results/ JSON into a results directory
    score DIR...                         GAMA-Bench's score per model, game and version (score.csv)
    reenact IMPORTED_DIR --templates GAMA_BENCH/prompt_template --out DIR
                                         the imported runs played again, GAMA-Bench-exact, compared reply by reply
"""

from __future__ import annotations

from pathlib import Path

from ...analysis.subcommands import CommandParser, command, recorded, results_directory, scenario_option
from ...errors import UserError
from ...staging import import_outcome


@command("import-gamabench")
def import_gamabench(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim import-gamabench",
                           description="Read GAMA-Bench's raw_results/ (JSON only: nothing in them is run) into a "
                                       "results directory: an experiment per game, model, prompt version and "
                                       "condition, a run per file, marked as imported.")
    parser.add_argument("source", type=Path, help="GAMA-Bench's raw_results/ directory (or a game folder of it)")
    parser.add_argument("--out", type=Path, required=True,
                        help="a new results directory to write (written whole, or not at all)")
    options = parser.parse_args(argv)
    with import_outcome(options.out):
        from .importer import import_runs  # lazy: this subcommand's own module, not score's

        groups = import_runs(options.source, options.out)
    runs = sum(len(group) for group in groups.values())
    print(f"imported {runs} runs into {len(groups)} experiments under {options.out}; "
          f"python -m agentsim score {options.out}")
    return 0


@command("score")
def score(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim score",
                           description="GAMA-Bench's 0-100 score per model, game, prompt version and condition of "
                                       "the GAMA-Bench runs (imported or agentsim's) under the directories; "
                                       "prints the table and writes it as CSV.")
    parser.add_argument("directories", nargs="+", help="results directories (searched recursively)")
    parser.add_argument("--out", type=Path, default=None, help="the CSV to write (default: FIRST_DIR/score.csv)")
    scenario_option(parser)
    options = parser.parse_args(argv)
    from .scores import gamabench_experiments, run_scores, score_table, write_csv  # lazy: not import's module

    scores = []
    for directory in options.directories:
        for experiment in gamabench_experiments(recorded(results_directory(directory), options.scenario_files)):
            scores.extend(run_scores(experiment))
            experiment.close()
    if not scores:
        raise UserError(f"no GAMA-Bench runs under {', '.join(options.directories)}; import some (python -m agentsim "
                        f"import gamabench RAW_DIR --out DIR) or run scenarios/gamabench/*.py")
    rows = score_table(scores)
    out = options.out or Path(options.directories[0]) / "score.csv"
    write_csv(out, rows)
    width = max(len(row["model"]) for row in rows)
    for row in rows:
        condition = f" [{row['condition']}]" if row["condition"] else ""
        spread = f" ± {row['std']:.1f}" if row["std"] is not None else ""
        print(f"{row['model']:<{width}}  {row['game']:<32} {row['version']}{condition}: {row['score']:5.1f}{spread} "
              f"({row['runs']} runs" + (f"; {row['fallbacks']} moves were fallbacks, no reply gave them)"
                                        if row["fallbacks"] else ")"))
    print(f"wrote {out}")
    return 0


@command("reenact")
def reenact(argv: list[str]) -> int:
    parser = CommandParser(prog="python -m agentsim reenact",
                           description="Play each imported GAMA-Bench run (import gamabench) again in agentsim's game, "
                                       "in GAMA-Bench-exact mode, with what its file records as the players' answers, "
                                       "and compare reply by reply: agentsim's prompt with the recorded conversation, "
                                       "its reading with the recorded one, the round's outcome with the recorded "
                                       "round. Writes DIR/reenact.csv and prints the shares equal and each kind of "
                                       "difference.")
    parser.add_argument("directory", type=results_directory, help="a results directory of imported GAMA-Bench runs")
    parser.add_argument("--templates", type=Path, required=True,
                        help="the prompt_template/ folder of your GAMA-Bench checkout (its games/ beside it)")
    parser.add_argument("--out", type=Path, required=True, help="where to write reenact.csv")
    parser.add_argument("--scenarios", type=Path, default=None,
                        help="the folder of agentsim's GAMA-Bench scenario files (default: scenarios/gamabench of "
                             "this checkout of agentsim)")
    parser.add_argument("--no-revisions", action="store_true",
                        help="play every run with the checkout's texts as they are, not also with earlier versions "
                             "from its git history")
    options = parser.parse_args(argv)
    from .reenact import SCENARIOS, summary  # lazy: this subcommand's own module (the games, the checkout's reader)
    from .reenact import reenact as play  # lazy: as above

    results = play(options.directory, options.templates, options.out, options.scenarios or SCENARIOS,
                   revisions=not options.no_revisions)
    for line in summary(results):
        print(line)
    print(f"wrote {options.out / 'reenact.csv'}")
    return 0
