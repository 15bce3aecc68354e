"""How each built-in provider's backend is made from its spec and options (the `build` of its
descriptor in llm/providers.py), and the offline tokenizer of a model in process. Each imports
its provider's module, and so its SDK, only when called: a run imports the SDKs it uses.

Keys come from the usual environment variables (or a base URL's `user:KEY@`); with a base URL
(a self-hosted server) the key is optional, without one it is required, and a missing one is
one line naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BackendSpecError
from ..secrets import credentials_for, register_secret

if TYPE_CHECKING:
    from .base import LanguageModel
    from .specs import BackendOptions, BackendSpec


def require_key(variable: str, spec: BackendSpec) -> str:
    key = os.environ.get(variable, "").strip()
    if not key:
        raise BackendSpecError(f"backend '{spec.text}' needs an API key: set the environment variable {variable}")
    return key


def _url_key(url: str | None) -> str | None:
    """The key a base URL was given with (`http://user:KEY@host`): used, never recorded."""
    credentials = credentials_for(url)
    return (credentials[1] or credentials[0]) if credentials else None


def _key(variable: str, spec: BackendSpec, base_url: str | None) -> str:
    key = os.environ.get(variable) or _url_key(base_url) or ("EMPTY" if base_url else require_key(variable, spec))
    register_secret(key)
    return key


def openai(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    """OpenAI's API through its SDK; another OpenAI-compatible server through the lean path
    (llm/openai_http.py: the same request, a fraction of the CPU)."""
    base_url = spec.base_url or options.base_url
    key = _key("OPENAI_API_KEY", spec, base_url)
    from .openai_backend import OpenAIModel, hosted  # lazy: each provider's module and SDK, for the backends built

    if base_url is not None and not hosted(base_url):
        from .openai_http import OpenAIHTTPModel  # lazy: aiohttp, for the backends built

        return OpenAIHTTPModel(name=spec.text, model=spec.target, api_key=key, base_url=base_url,
                               timeout_s=options.timeout_s, max_connections=max(options.limits.max_in_flight, 8))
    return OpenAIModel(name=spec.text, model=spec.target, api_key=key, base_url=base_url, timeout_s=options.timeout_s,
                       max_connections=max(options.limits.max_in_flight, 8))


def anthropic(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    base_url = spec.base_url or options.base_url
    key = _key("ANTHROPIC_API_KEY", spec, base_url)
    from .anthropic_backend import AnthropicModel  # lazy: each provider's module and SDK, for the backends built

    return AnthropicModel(name=spec.text, model=spec.target, api_key=key, base_url=base_url,
                          timeout_s=options.timeout_s, cache_breakpoints=options.cache_breakpoints)


def tgi(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    if not spec.target.startswith(("http://", "https://")):
        raise BackendSpecError(f"backend '{spec.text}' needs a URL, e.g. tgi:http://gpu-box:8080")
    from .tgi import TGIModel  # lazy: aiohttp, for the backends built

    return TGIModel(name=spec.text, url=spec.target, token=os.environ.get("HF_TOKEN") or _url_key(spec.target),
                    timeout_s=options.timeout_s, max_connections=max(options.limits.max_in_flight, 8))


def local(spec: BackendSpec, options: BackendOptions) -> LanguageModel:
    require_local_model(spec)
    if _llama_cpp(spec.target):
        from .llamacpp import SMOLLM2, LlamaCppModel  # lazy: llama.cpp's module (the `local` extra)

        return LlamaCppModel(name=spec.text, path=SMOLLM2 if spec.target.lower() == SMOLLM2 else spec.target)
    from .local import LocalModel  # lazy: transformers' module (the `local` extra)

    return LocalModel(name=spec.text, path=spec.target)


def _llama_cpp(target: str) -> bool:
    return target.lower() == "smollm2" or target.lower().endswith(".gguf")


def require_local_model(spec: BackendSpec) -> None:
    """A `local:` target that is SmolLM2, a file or directory here, or a Hugging Face id already
    in the local cache; anything else fails at once, before transformers would try a model hub."""
    target = spec.target
    if target.lower() == "smollm2" or Path(target).expanduser().exists():
        return
    if "/" in target and not target.startswith((".", "/", "~")):
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:  # no transformers: LocalModel says which extra to install
            return
        if isinstance(try_to_load_from_cache(target, "config.json"), str):
            return
    raise BackendSpecError(f"backend '{spec.text}': '{target}' is neither a file or directory here nor a known local "
                           f"model; use local:smollm2, local:PATH.gguf, local:MODEL_DIRECTORY, or a Hugging Face id "
                           f"already downloaded to this machine's cache")


def local_tokenizer(target: str) -> tuple[Callable[[str], int], str] | None:
    """A local model's own token count (llama.cpp's vocabulary of a GGUF file, transformers'
    tokenizer of a model directory), or None where it cannot be read here."""
    try:
        if _llama_cpp(target):
            from llama_cpp import Llama

            from .llamacpp import SMOLLM2, smollm2_path  # lazy: llama.cpp's module (the `local` extra)

            path = smollm2_path() if target.lower() == SMOLLM2 else Path(target)
            vocabulary = Llama(model_path=str(path), vocab_only=True, verbose=False)
            return (lambda text: len(vocabulary.tokenize(text.encode(), add_bos=False, special=False)),
                    f"llama.cpp's vocabulary of {path.name}")
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(target, local_files_only=True)
        return lambda text: len(tokenizer.encode(text, add_special_tokens=False)), f"the tokenizer of {target}"
    except Exception:  # no local extra, a model not here: no tokenizer, and the estimate says so
        return None
