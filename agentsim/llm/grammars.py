"""A `Grammar` (regex or JSON schema) as llama.cpp's GBNF, for llama-cpp-python in process and
for `llama-server`, which constrain decoding with GBNF grammars and take no regex.

A choice grammar (a finite set of replies) becomes the alternation of its replies as literals,
with nothing optional between their characters. Otherwise the translation is llama.cpp's own
(`llama_cpp.llama_grammar`, the Python twin of the C++ `json_schema_to_grammar`): a JSON schema
through `json_schema_to_gbnf`, a regex as the pattern of a string schema with `raw_pattern`
set, so the grammar matches the text itself rather than a quoted JSON string. It needs
llama-cpp-python (the `local` extra).
"""

from __future__ import annotations

import functools

from ..errors import BackendSpecError
from .base import Grammar


@functools.lru_cache(maxsize=64)
def to_gbnf(grammar: Grammar) -> str:
    if grammar.choices:
        return "root ::= " + " | ".join(_literal(reply) for reply, _ in grammar.choices) + "\n"
    try:
        from llama_cpp.llama_grammar import SchemaConverter, json_schema_to_gbnf
    except ImportError:
        raise BackendSpecError("a grammar for llama.cpp needs llama-cpp-python: pip install -e '.[local]'") from None
    if grammar.kind == "json":
        return json_schema_to_gbnf(grammar.value)
    converter = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=True)
    converter.visit({"type": "string", "pattern": f"^{grammar.value}$"}, "")
    return converter.format_grammar()


def _literal(text: str) -> str:
    """`text` as a GBNF string literal: exactly these characters, no optional whitespace."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f'"{escaped}"'


def gbnf_if_available(grammar: Grammar) -> str | None:
    """The GBNF for a server that may be llama.cpp's (an OpenAI-compatible base URL), or None
    without llama-cpp-python: then only servers that take the regex itself constrain decoding."""
    try:
        return to_gbnf(grammar)
    except BackendSpecError:
        return None
