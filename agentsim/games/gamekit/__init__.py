"""The registration of agentsim's game layer (agentsim.gamekit) as a family: every game
written on the layer (a scenario file, or a package of its own) has from here its runs'
report section (report.py), the class its runs record (recorded.py: `RecordedGame`, so
`report`, `transcript` and the DataFrames read a layer game's results from the recorded data
alone, with no `--scenario FILE`) and its checkpoint classes."""

from .. import Family, register_family

register_family(Family(
    name="gamekit",
    summary="games written in one file on agentsim's game layer (agentsim.gamekit)",
    scenario_names=(),  # each layer game names itself; its rounds say they are the layer's
    report_sections=(f"{__name__}.report",),
    checkpoint_classes=("agentsim.gamekit.game:KitState", "agentsim.gamekit.presentation:KitMetrics"),
))
