"""The analysis framework: what every game's analysis shares, and no game's own analysis.

    recorded       find_experiments, RecordedExperiment (reading runs back), save_artifact
    report         build_report, register_section (a section for a kind of scenario), ReportContext
    stats          bias_test, js_distance_from_uniform, proportion_interval
    transcript     write_transcript: a run's prompts and replies
    subcommands    SUBCOMMANDS and @command: the registry of `python -m agentsim NAME`
    commands       the framework's subcommands (report, transcript), and the whole table once
                   every game family has registered its own

A game's own measurements live in its family's package (agentsim/games/<family>/): the naming
game's bias tests, strategy tables, critical mass and comprehension in agentsim/games/naming/,
SIGN's figures in agentsim/games/sign/report.py. This package imports no family; families
import it (tests/test_layers.py).
"""
