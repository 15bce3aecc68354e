#!/usr/bin/env bash
# TGI serving a 4-bit Llama 3.1 70B Instruct on one A100 80GB. See README.md beside this file.
#   MODEL=hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4 QUANTIZE=awq ./launch.sh
#   MODEL=hugging-quants/Meta-Llama-3.1-70B-Instruct-GPTQ-INT4 QUANTIZE=gptq ./launch.sh
#   MODEL=meta-llama/Llama-3.1-70B-Instruct QUANTIZE=bitsandbytes-nf4 ./launch.sh   # slower, no pre-quantized weights
set -euo pipefail
MODEL="${MODEL:-hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4}"
QUANTIZE="${QUANTIZE:-awq}"
PORT="${PORT:-8080}"
VOLUME="${VOLUME:-$HOME/.cache/tgi}"      # weights are downloaded here once
IMAGE="${IMAGE:-ghcr.io/huggingface/text-generation-inference:3.3.4}"

# The flags that bound concurrency and batch tokens (numbers for 4-bit 70B weights, ~37 GB,
# leaving ~38 GB of KV cache at 0.31 MiB per token: ~120k tokens):
#   --max-concurrent-requests  requests TGI accepts at once; beyond it, 429 {"error_type": "overloaded"}
#   --max-batch-total-tokens   tokens (prompt + generated) of all sequences in a batch: the KV budget
#   --max-batch-prefill-tokens prompt tokens prefilled in one forward pass
#   --max-input-tokens         longest prompt; --max-total-tokens: prompt + new tokens per request
exec docker run --gpus all --shm-size 1g -p "${PORT}:80" -v "${VOLUME}:/data" \
    -e HF_TOKEN="${HF_TOKEN:-}" \
    "${IMAGE}" \
    --model-id "${MODEL}" \
    --quantize "${QUANTIZE}" \
    --max-concurrent-requests 128 \
    --max-batch-total-tokens 100000 \
    --max-batch-prefill-tokens 16384 \
    --max-input-tokens 3072 \
    --max-total-tokens 3328 \
    --max-waiting-tokens 20 \
    --port 80
