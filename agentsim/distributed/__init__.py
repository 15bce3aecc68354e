"""Running an experiment's replicates and variants on Ray (`--executor ray`).

The driver (`driver.RayExecutor`, in the `python -m agentsim` process) owns the output
directory: the store, `summary.json` and the live view. Each run is a Ray task
(`worker.run_replicate`) that rebuilds the run from its seed (and checkpoint, when it
resumes) and streams its records back: rows travel with the checkpoint they lead to, and
the driver commits each batch in one transaction, as the in-process executor does. Workers
never open the database, so a cluster needs no shared filesystem for it.

Backends are shared across the cluster by two actors (`limits.py`): one limiter per
backend (in-flight cap, requests and tokens per minute, adapting as in-process) and one
budget (`--max-calls`, `--max-cost`). A worker that dies (killed, its node lost) takes
nothing with it: the driver sends its run to another worker from the last checkpoint it
committed, and the slots the dead worker held are given back.

Ray is an extra (`pip install 'agentsim[ray]'`): nothing here is imported unless a user
asks for `--executor ray`, and `require_ray` says so in one line when it is missing.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import UserError

INSTALL = "pip install 'agentsim[ray]'"


def require_ray() -> ModuleType:
    """The `ray` module, or a UserError naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise UserError(f"--executor ray needs Ray, which is not installed; {INSTALL}, or drop --executor ray") from None
    return ray
