"""The dtype of every column of the results' DataFrames (agentsim/results.py), fixed by the
column, not by the data: the tables of an experiment where every run flipped and of one where
none did have the same dtypes, so they concatenate, compare and filter alike.

A column that can hold a missing value has one of pandas' nullable dtypes (`Int64`, `Float64`,
`boolean`, `string`, missing values `pd.NA`); one that cannot, NumPy's (`int64`, `bool`);
times are `datetime64[ns, UTC]`. A count is 0 where nothing was counted (a name no agent said
in a round, an action a model never chose, an error kind a run never met): `count`, below.
docs/data.md gives each table's dtypes; a family declares those of its own summary keys and
round tallies (`Scenario.summary_dtypes`, `Scenario.round_dtypes`); a column nobody declares is
typed by the values it holds (the rule in `inferred`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

COUNT = "count"  # Int64, 0 where nothing was counted
TIME = "datetime64[ns, UTC]"

RUN_DTYPES: Mapping[str, str] = {
    "run": "int64", "replicate": "int64", "seed": "int64", "backend": "string", "status": "string",
    "stop_reason": "string", "started": TIME, "finished": TIME,
    # the runner's part of every run's summary (missing while a run has none yet)
    "rounds": "Int64", "interactions": "Int64", "calls": "Int64", "invalid_replies": "Int64", "reasks": "Int64",
    "fallbacks": "Int64", "prompt_tokens": "Int64", "completion_tokens": "Int64", "cost_usd": "Float64",
    "cache_hits": "Int64", "retries": "Int64", "decisions": "Int64", "sampled_locally": "Int64",
    "variant": "Int64", "errors.*": COUNT,
    "usage_by_backend.*.latency_*": "Float64", "usage_by_backend.*.cost_usd": "Float64",
    "usage_by_backend.*.errors.*": COUNT, "usage_by_backend.*": "Int64",
}
MOVE_DTYPES: Mapping[str, str] = {
    "run": "int64", "t": "int64", "round": "int64", "outcome": "Int64", "agent": "int64", "model": "string",
    "kind": "string", "action": "string", "payoff": "Float64", "fallback": "bool", "options": "object",
    "memory": "object",
}
DECISION_DTYPES: Mapping[str, str] = {
    "run": "int64", "t": "int64", "agent": "int64", "attempt": "int64", "action": "string", "payoff": "Float64",
    "parsed": "string", "context": "string", "reply": "string", "prompt_tokens": "Int64",
    "completion_tokens": "Int64", "latency_us": "Int64", "error": "string", "probabilities": "string",
    "fallback": "bool", "sampled_locally": "bool", "model": "string", "kind": "string", "prompt": "string",
}
ROUND_DTYPES: Mapping[str, str] = {"run": "int64", "round": "int64"}
BY_MODEL_DTYPES: Mapping[str, str] = {
    "run": "int64", "model": "string", "kind": "string", "runs": "int64", "agents": "int64", "decisions": "int64",
    "fallbacks": "int64", "answers": "int64", "mean_payoff": "Float64", "choices.*": COUNT,
}


def typed(frame: pd.DataFrame, *dtypes: Mapping[str, str], counted: pd.Series | None = None) -> pd.DataFrame:
    """`frame` with every column cast to its declared dtype (the first of `dtypes` that names
    it: a column's name, or a pattern such as `productions.*`), or to the one `inferred`
    gives. `counted`: the rows whose missing counts are 0 (default: every row)."""
    import pandas as pd

    columns = {}
    for column in frame.columns:
        declared = _declared(str(column), dtypes)
        values = frame[column]
        if declared == COUNT:
            values = values.astype("Int64")
            values = values.fillna(0) if counted is None else values.mask(values.isna() & counted, 0)
        elif declared == TIME:
            values = pd.to_datetime(values, utc=True).astype(TIME)
        elif declared is not None:
            values = values.astype(declared)
        else:
            values = values.astype(inferred(values))
        columns[column] = values
    return pd.DataFrame(columns, index=frame.index)


def inferred(values: pd.Series) -> str:
    """The dtype of a column no one declares, from the kinds of value it holds (missing ones
    aside): only bools `boolean`, only whole numbers `Int64`, numbers `Float64`, only text
    `string`; anything else (or nothing but missing values) `object`."""
    import pandas as pd

    present = [value for value in values if not _missing(value)]
    if not present:
        return "object"
    if all(isinstance(value, bool) for value in present):
        return "boolean"
    if all(pd.api.types.is_integer(value) and not isinstance(value, bool) for value in present):
        return "Int64"
    if all(pd.api.types.is_number(value) and not isinstance(value, bool) for value in present):
        return "Float64"
    if all(isinstance(value, str) for value in present):
        return "string"
    return "object"


def _declared(column: str, dtypes: tuple[Mapping[str, str], ...]) -> str | None:
    for declared in dtypes:
        if column in declared:
            return declared[column]
    for declared in dtypes:
        for pattern, dtype in declared.items():
            if "*" in pattern and fnmatch.fnmatchcase(column, pattern):
                return dtype
    return None


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or (not isinstance(value, (list, tuple, dict)) and bool(pd.isna(value)))
