"""A local model's name in the response cache: its content, not its path.

The cache answers a request it has seen for the same model (llm/cache.py). For a model served
over the network the model's name is all there is; a local model (`local:PATH.gguf`,
`local:smollm2`, a transformers directory or cached Hugging Face id) is a file, and its path
says nothing about what is in it: a file replaced at the same path got the old file's answers,
and the same file copied elsewhere missed every one. So a local model is named by its content:
each file's size with a hash of its first and last 8 MiB (the GGUF header, metadata and
tensor table, the first and last tensors): reading a model's whole weights at every start
would cost seconds per gigabyte, and a changed model changes these. A model that cannot be
read is named as given (its backend says what is wrong with it).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .providers import provider as described

SAMPLE_BYTES = 8 * 2**20
SMOLLM2 = "smollm2"


def cache_identity(provider: str, target: str) -> str:
    """What the response cache calls the model: the content of a model run in process (its
    provider's descriptor says which: llm/providers.py) where `target` names a file here,
    else its name."""
    found = described(provider)
    if found is None or not found.in_process:
        return target
    path = _local_path(target)
    if path is None:
        return target
    try:
        return f"sha256:{content_digest(path)}"
    except OSError:
        return target


def content_digest(path: Path) -> str:
    """A model file's (or directory's files') sizes and first and last `SAMPLE_BYTES`, hashed."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(file for file in path.rglob("*") if file.is_file())
    for file in files:
        size = file.stat().st_size
        name = "" if file == path else file.relative_to(path).as_posix()
        digest.update(f"{name}\0{size}\0".encode())
        with file.open("rb") as handle:
            digest.update(handle.read(SAMPLE_BYTES))
            if size > SAMPLE_BYTES:
                handle.seek(max(SAMPLE_BYTES, size - SAMPLE_BYTES))
                digest.update(handle.read(SAMPLE_BYTES))
    return digest.hexdigest()


def _local_path(target: str) -> Path | None:
    """The file or directory a `local:` target names, or None if there is none here."""
    if target.lower() == SMOLLM2:
        from .llamacpp import smollm2_path  # lazy: llama.cpp's module (numpy), only for SmolLM2

        try:
            return smollm2_path()
        except Exception:  # not installed: building the backend says so
            return None
    path = Path(target).expanduser()
    if path.exists():
        return path.resolve()
    if "/" not in target or target.startswith((".", "/", "~")):  # a path that is not there
        return None
    try:  # a Hugging Face id: the snapshot the cache holds
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(target, "config.json")
    except Exception:  # not installed, or not an id after all
        return None
    return Path(found).parent if isinstance(found, str) else None
