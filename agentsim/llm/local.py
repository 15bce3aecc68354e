"""`local:HF_ID_OR_PATH`: a causal language model run in process with transformers and torch
(the `local` extra: `pip install -e '.[local]'`).

Requests that are waiting at the same moment go through the model together: a worker takes
every queued request (up to `max_batch`), left-pads them into one batch and decodes them step
by step in one forward pass per token, with a KV cache, in a worker thread so the event loop
keeps running; requests arriving meanwhile form the next batch. Closing waits for the batch in
the thread to return (a thread cannot be stopped), as llama.cpp's backend does. Each row samples with its own
parameters (temperature, top-k, top-p, repetition penalty, stop strings, max tokens) and its
own torch generator seeded from the request's seed.

A choice grammar (a finite set of replies, `Grammar.choice`) is enforced: at every step only the
tokens that keep the text a prefix of a reply are drawn (the end of generation once it is one),
before the rest of the sampler (temperature, top-k, top-p on the tempered probabilities). Each
option's exact probability under that sampler is then scored on every token path that spells
its reply (llm/scoring.py): the prompt is evaluated once and each path continues a copy of its
parent's KV cache. Tokens are read as the text they add after a fixed anchor token, which is
exact for ASCII replies (the naming game's); a grammar with other characters, or any regex or
JSON schema, is not applied here (use `local:PATH.gguf` through llama.cpp), and free text has no
exact chance per option, so none is reported.

torch and transformers are imported here only, so the rest of agentsim never needs them.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
from pathlib import Path
from typing import Any, cast

from ..errors import BackendError, BackendSpecError
from . import chat_format
from .base import Completion, Request
from .scoring import KeptDistributions, TokenTable, can_score, option_distribution
from .threads import settled


class LocalModel:
    immediate = False
    scores_options = True  # under an ASCII choice grammar (see the module's docstring)

    def __init__(self, *, name: str, path: str, max_batch: int = 32, device: str | None = None) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise BackendSpecError(f"backend '{name}' needs torch and transformers: pip install -e '.[local]'") from None
        self.name = name
        self.endpoint = str(Path(path).resolve()) if Path(path).exists() else path
        self.max_batch = max_batch
        self.torch = torch
        try:
            # Any: transformers types what these return too loosely to check calls against
            # (`decode` is `str | list[str]` whatever it is given).
            self.tokenizer = cast(Any, AutoTokenizer.from_pretrained(path))
            self.model = cast(Any, AutoModelForCausalLM.from_pretrained(path))
        except (OSError, ValueError) as error:
            raise BackendSpecError(f"backend '{name}': cannot load a model from '{path}' ({type(error).__name__}); "
                                   f"give a local directory or a downloaded Hugging Face id") from None
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.model_id = Path(path).name or path
        # transformers 5 renamed the KV-cache argument and output field from `past_key_values` to `cache`
        # (the old name warns, and will go); 4.x knows only the old one.
        forward = inspect.signature(self.model.forward).parameters
        self.cache_field = "cache" if "cache" in forward else "past_key_values"
        self.pending: list[tuple[Request, asyncio.Future[Completion]]] = []
        self.worker: asyncio.Task[None] | None = None
        self.batches: list[int] = []  # sizes of the batches run, for tests and tuning
        self.table: TokenTable | None = None
        self.distributions = KeptDistributions()

    async def complete(self, request: Request) -> Completion:
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self.pending.append((request, future))
        if self.worker is None or self.worker.done():
            self.worker = asyncio.get_running_loop().create_task(self._serve())
        return await future

    async def _serve(self) -> None:
        await asyncio.sleep(0)  # let the requests issued in the same tick join the batch
        while self.pending:
            batch, self.pending = self.pending[: self.max_batch], self.pending[self.max_batch:]
            live = [(request, future) for request, future in batch if not future.done()]
            if not live:
                continue
            self.batches.append(len(live))
            work = asyncio.get_running_loop().run_in_executor(None, self._generate, [request for request, _ in live])
            try:
                results = await asyncio.shield(work)
            except asyncio.CancelledError:  # closing: the model outlives the thread inside it
                await settled(work)
                for _, future in live:
                    if not future.done():
                        future.set_exception(BackendError("local model: closed", kind="error"))
                raise
            except Exception as error:  # the model failed: every call of the batch failed, recorded by kind
                for _, future in live:
                    if not future.done():
                        future.set_exception(BackendError(f"local model failed ({type(error).__name__})", kind="error"))
                continue
            for (_, future), completion in zip(live, results):
                if not future.done():
                    future.set_result(completion)

    def _prompt(self, request: Request) -> str:
        messages = [{"role": message.role, "content": message.content} for message in request.messages]
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return chat_format.render(request.messages, "plain")

    def _generate(self, requests: list[Request]) -> list[Completion]:
        torch = self.torch
        tokenizer = self.tokenizer
        encoded = tokenizer([self._prompt(request) for request in requests], return_tensors="pt", padding=True,
                            add_special_tokens=False)
        ids = encoded["input_ids"].to(self.device)
        mask = encoded["attention_mask"].to(self.device)
        rows = len(requests)
        prompt_tokens = mask.sum(dim=1).tolist()
        generators = [torch.Generator(device=self.device).manual_seed((request.seed or 0) & 0x7FFF_FFFF_FFFF_FFFF)
                      for request in requests]
        steps = max(request.sampling.max_tokens for request in requests)
        generated: list[list[int]] = [[] for _ in range(rows)]
        replies = [_replies(request) for request in requests]  # each row's choice grammar, or None
        written = [b""] * rows
        table = self._table() if any(replies) else None
        finished = [False] * rows
        eos = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id
        past = None
        step_ids, step_mask = ids, mask
        with torch.inference_mode():
            for _ in range(steps):
                positions = (step_mask.cumsum(-1) - 1).clamp(min=0)
                if past is not None:
                    positions = positions[:, -1:]
                output = self.model(input_ids=step_ids, attention_mask=step_mask, position_ids=positions,
                                    use_cache=True, **{self.cache_field: past})
                past = getattr(output, self.cache_field)
                logits = output.logits[:, -1, :].float()
                chosen = []
                for row, request in enumerate(requests):
                    if finished[row]:
                        chosen.append(pad)
                        continue
                    row_logits, held_to = logits[row], replies[row]
                    if table is not None and held_to is not None:
                        row_logits = _held(row_logits, table, held_to, written[row], torch)
                    token = self._sample(row_logits, request, ids[row], generated[row], generators[row])
                    if table is not None:
                        written[row] += table.piece(token)
                    generated[row].append(token)
                    chosen.append(token)
                    text = tokenizer.decode(generated[row], skip_special_tokens=True)
                    if token == eos or len(generated[row]) >= request.sampling.max_tokens or \
                            any(stop in text for stop in request.sampling.stop):
                        finished[row] = True
                if all(finished):
                    break
                step_ids = torch.tensor(chosen, device=self.device).unsqueeze(1)
                step_mask = torch.cat([step_mask, torch.ones((rows, 1), dtype=step_mask.dtype, device=self.device)], dim=1)
        completions = []
        for row, request in enumerate(requests):
            tokens = [token for token in generated[row] if token != eos]
            text = tokenizer.decode(tokens, skip_special_tokens=True)
            for stop in request.sampling.stop:
                if stop in text:
                    text = text[: text.index(stop)]
            completion = Completion(text=text, prompt_tokens=int(prompt_tokens[row]),
                                    completion_tokens=len(generated[row]), model=self.model_id, raw={"batch": rows})
            if table is not None and replies[row] is not None and request.options and can_score(request):
                prompt = ids[row][mask[row].bool()]
                distribution = self.distributions.get_or_score(
                    request, prompt.cpu().numpy().tobytes(), functools.partial(self._distribution, request, prompt, table))
                if not distribution.truncated:
                    completion.option_probabilities = distribution.probabilities
                    completion.unscored = distribution.unscored
            completions.append(completion)
        return completions

    def _distribution(self, request: Request, prompt: Any, table: TokenTable) -> Any:
        """The option distribution after `prompt` (its token ids, unpadded): the prompt once,
        then each path from a copy of its parent's cache, one token at a time."""
        torch = self.torch
        caches: dict[tuple[int, ...], Any] = {}
        field = self.cache_field

        def next_logits(path: tuple[int, ...]) -> Any:
            with torch.inference_mode():
                if not path:
                    output = self.model(input_ids=prompt.unsqueeze(0), use_cache=True)
                else:
                    parent = copy.deepcopy(caches[path[:-1]])
                    output = self.model(input_ids=torch.tensor([[path[-1]]], device=self.device), use_cache=True,
                                        **{field: parent})
            caches[path] = getattr(output, field)
            return output.logits[0, -1, :].float().cpu().numpy()

        assert request.grammar is not None
        sampling = request.sampling
        return option_distribution(dict(request.grammar.choices), table, next_logits, temperature=sampling.temperature,
                                   top_k=sampling.top_k, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
                                   tempered_top_p=True)

    def _table(self) -> TokenTable:
        """Each token's text as the bytes it adds after an anchor token (a lone token's decoding
        may drop a leading space), built once."""
        if self.table is None:
            tokenizer = self.tokenizer
            anchor = tokenizer.encode("a", add_special_tokens=False)[-1]
            head = tokenizer.decode([anchor], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            pieces = []
            for token in range(int(self.model.get_output_embeddings().weight.shape[0])):
                text = tokenizer.decode([anchor, token], skip_special_tokens=False, clean_up_tokenization_spaces=False) \
                    if token < len(tokenizer) else ""
                pieces.append(text[len(head):].encode() if text.startswith(head) else b"")
            self.table = TokenTable(pieces, [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [])
        return self.table

    def _sample(self, logits: Any, request: Request, prompt: Any, generated: list[int], generator: Any) -> int:
        torch = self.torch
        sampling = request.sampling
        logits = logits.clone()
        if sampling.repetition_penalty is not None and sampling.repetition_penalty != 1.0:
            seen = torch.unique(torch.cat([prompt, torch.tensor(generated, dtype=prompt.dtype, device=prompt.device)]))
            values = logits[seen]
            logits[seen] = torch.where(values > 0, values / sampling.repetition_penalty, values * sampling.repetition_penalty)
        if sampling.temperature <= 0:
            return int(logits.argmax())
        logits = logits / sampling.temperature
        if sampling.top_k is not None and sampling.top_k < logits.numel():
            threshold = logits.topk(sampling.top_k).values[-1]
            logits[logits < threshold] = float("-inf")
        probabilities = torch.softmax(logits, dim=-1)
        if sampling.top_p is not None and sampling.top_p < 1:
            ordered, order = probabilities.sort(descending=True)
            keep = ordered.cumsum(0) - ordered < sampling.top_p
            filtered = torch.zeros_like(probabilities)
            filtered[order[keep]] = ordered[keep]
            probabilities = filtered / filtered.sum()
        return int(torch.multinomial(probabilities, 1, generator=generator))

    async def aclose(self) -> None:
        """Stop serving once the batch in flight has left the model (its worker thread cannot be
        stopped, and the model must outlive it); calls still waiting fail."""
        if self.worker is not None and not self.worker.done():
            self.worker.cancel()
            await asyncio.gather(self.worker, return_exceptions=True)
        for _, future in self.pending:
            if not future.done():
                future.set_exception(BackendError("local model: closed", kind="error"))
        self.pending.clear()


def _replies(request: Request) -> list[bytes] | None:
    """The replies of the request's choice grammar, when this backend can hold a reply to them."""
    grammar = request.grammar
    if grammar is None or not grammar.choices or not all(reply.isascii() for reply, _ in grammar.choices):
        return None
    return [reply.encode() for reply, _ in grammar.choices]


def _held(logits: Any, table: TokenTable, replies: list[bytes], written: bytes, torch: Any) -> Any:
    """`logits` with every token the grammar forbids after `written` at minus infinity."""
    candidates, ends = table.allowed(replies, written)
    allowed = [token for token, _ in candidates] + ends
    held = torch.full_like(logits, float("-inf"))
    index = torch.tensor(allowed, dtype=torch.long, device=logits.device)
    held[index] = logits[index]
    return held
