"""`local:HF_ID_OR_PATH`: a causal language model run in process with transformers and torch
(the `local` extra: `pip install -e '.[local]'`).

Requests that are waiting at the same moment go through the model together: a worker takes
every queued request (up to `max_batch`), left-pads them into one batch and decodes them step
by step in one forward pass per token, with a KV cache, in a worker thread so the event loop
keeps running; requests arriving meanwhile form the next batch. Each row samples with its own
parameters (temperature, top-k, top-p, repetition penalty, stop strings, max tokens) and its
own torch generator seeded from the request's seed. This backend has no constrained decoding
(a grammar is not applied), so its replies are free text and it reports no option
probabilities: only a sampler held to a finite set of replies has an exact chance per option
(llm/scoring.py; `local:PATH.gguf` runs such models through llama.cpp, which can).

torch and transformers are imported here only, so the rest of agentsim never needs them.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any, cast

from ..errors import BackendError, BackendSpecError
from . import chat_format
from .base import Completion, Request


class LocalModel:
    immediate = False

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
            try:
                results = await asyncio.to_thread(self._generate, [request for request, _ in live])
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
                    token = self._sample(logits[row], request, ids[row], generated[row], generators[row])
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
            completions.append(Completion(text=text, prompt_tokens=int(prompt_tokens[row]),
                                          completion_tokens=len(generated[row]), model=self.model_id,
                                          raw={"batch": rows}))
        return completions

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
        if self.worker is not None and not self.worker.done():
            self.worker.cancel()
            await asyncio.gather(self.worker, return_exceptions=True)
