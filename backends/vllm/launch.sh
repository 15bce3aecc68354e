#!/usr/bin/env bash
# vLLM's OpenAI-compatible server with a 4-bit Llama 3.1 70B Instruct on one A100 80GB. See README.md.
#   MODEL=hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4 QUANTIZATION=awq_marlin ./launch.sh
#   MODEL=hugging-quants/Meta-Llama-3.1-70B-Instruct-GPTQ-INT4 QUANTIZATION=gptq_marlin ./launch.sh
#   MODEL=meta-llama/Llama-3.1-70B-Instruct QUANTIZATION=bitsandbytes ./launch.sh   # nf4 at load time
set -euo pipefail
MODEL="${MODEL:-hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4}"
QUANTIZATION="${QUANTIZATION:-awq_marlin}"
PORT="${PORT:-8000}"

# The flags that bound concurrency and batch tokens:
#   --max-num-seqs            sequences in the running batch (more requests queue, unbounded)
#   --max-num-batched-tokens  tokens scheduled per step (prefill chunks + decodes)
#   --gpu-memory-utilization  share of the 80 GB for weights + KV cache
#   --max-model-len           longest prompt + completion (bounds KV per sequence)
exec vllm serve "${MODEL}" \
    --quantization "${QUANTIZATION}" \
    --max-model-len 4096 \
    --max-num-seqs 96 \
    --max-num-batched-tokens 16384 \
    --gpu-memory-utilization 0.92 \
    --enable-prefix-caching \
    --generation-config vllm \
    --port "${PORT}"
