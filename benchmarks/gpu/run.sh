#!/usr/bin/env bash
# Issue 29's GPU measurement in one command: install the carried wheels, check agentsim imports,
# then for each shape start benchmarks/gpu_server.py on the GPU, wait for /health, run
# benchmarks/gpu_throughput.py against it (agentsim vs a bare client, N 1000, TGI and lean
# OpenAI paths) and stop the server. Every step is bounded; a shape is skipped when too little
# of the budget is left. On the device (repo root, .whl carried):
#
#   set -o pipefail; PYTHONUNBUFFERED=1 timeout 470 bash benchmarks/gpu/run.sh smollm2-135m llama-1b 2>&1 | tee $OUT/gpu.log
#
# The wheels (agentsim's dependencies that a CUDA torch image lacks), fetched where pip reaches PyPI:
#
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_17_x86_64 -d .whl mesa==3.3.1 structlog==26.1.0 platformdirs==4.14.8 aiolimiter==1.3.0 uvloop==0.23.0 orjson==3.13.0
#
# Settings from the environment (defaults for the device):
#   BUDGET_S=450        seconds for the whole script; a shape starts only with SHAPE_MIN_S left
#   SHAPE_MIN_S=150     seconds a shape needs (server start, warm-up, two paths, best rate)
#   DEVICE=cuda         the server's --device (cpu for a rehearsal)
#   SERVER_PYTHON=python3, CLIENT_PYTHON=python3 (the rehearsal runs the server on a torch venv)
#   SITE=/tmp/site      where the wheels go (pip --target), put first on the client's PYTHONPATH
#   BENCH_ARGS=""       more arguments for gpu_throughput.py (e.g. "--agents 50 --rounds 2")
#   SERVER_ARGS="--log-batches"  arguments for gpu_server.py (each batch in its log; e.g. add "--max-batch 256")
#   LOGS=$OUT or /tmp   where each server's own log goes (server-SHAPE.log)
set -u -o pipefail
started=$SECONDS
BUDGET_S=${BUDGET_S:-450}
SHAPE_MIN_S=${SHAPE_MIN_S:-150}
DEVICE=${DEVICE:-cuda}
SERVER_PYTHON=${SERVER_PYTHON:-python3}
CLIENT_PYTHON=${CLIENT_PYTHON:-python3}
SITE=${SITE:-/tmp/site}
BENCH_ARGS=${BENCH_ARGS:-}
SERVER_ARGS=${SERVER_ARGS:---log-batches}
LOGS=${LOGS:-${OUT:-/tmp}}
export PYTHONUNBUFFERED=1
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true  # the best-rate replay keeps 1024 connections open
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(smollm2-135m)
left() { echo $((BUDGET_S - (SECONDS - started))); }
say() { echo "== [$((SECONDS - started)) s] $*"; }

say "wheels"
if ls .whl/*.whl >/dev/null 2>&1; then
    timeout 120 "$CLIENT_PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" .whl/*.whl || { echo "wheels did not install"; exit 1; }
else
    echo "no .whl/ here: agentsim's dependencies must already be installed"
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"

say "host"
(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi") 2>&1
echo "cores $(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg), open files $(ulimit -n)"
timeout 120 "$SERVER_PYTHON" -c "import sys, torch, transformers, tokenizers; print('server python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-', 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__)" \
    || { echo "the server's python lacks torch/transformers"; exit 1; }
timeout 120 "$CLIENT_PYTHON" -X importtime -c "import agentsim.cli, mesa, aiohttp, sys; print('client python', sys.version.split()[0], 'agentsim.cli imports; mesa', mesa.__version__, 'aiohttp', aiohttp.__version__)" 2>/tmp/importtime.txt \
    || { cat /tmp/importtime.txt | tail -20; echo "import agentsim.cli failed"; exit 1; }
echo "import agentsim.cli: $(tail -1 /tmp/importtime.txt | awk -F'|' '{printf "%.2f s", $2 / 1e6}')"

healthy() {  # curl where there is one, else Python's urllib
    if command -v curl >/dev/null; then curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1; return; fi
    "$CLIENT_PYTHON" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$1/health', timeout=2)" 2>/dev/null
}
server_pid=""
stop_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null
        for _ in $(seq 20); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$server_pid" 2>/dev/null
    fi
    server_pid=""
}
trap stop_server EXIT

port=18080
status=0
for shape in "${shapes[@]}"; do
    if [ "$(left)" -lt "$SHAPE_MIN_S" ]; then
        say "skipping $shape: $(left) s of the budget left, it needs $SHAPE_MIN_S"
        continue
    fi
    port=$((port + 1))
    log="$LOGS/server-$shape.log"
    say "server $shape on $DEVICE, port $port (its log: $log)"
    # shellcheck disable=SC2086
    timeout "$(left)" "$SERVER_PYTHON" benchmarks/gpu_server.py --shape "$shape" --device "$DEVICE" --port "$port" \
        $SERVER_ARGS >"$log" 2>&1 &
    server_pid=$!
    ready=""
    for _ in $(seq 240); do
        if healthy "$port"; then ready=1; break; fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.5
    done
    if [ -z "$ready" ]; then
        say "the $shape server did not become ready; its log:"; tail -30 "$log"; stop_server; status=1; continue
    fi
    grep "gpu server on" "$log"
    say "benchmark $shape ($(left) s of the budget left)"
    # shellcheck disable=SC2086
    timeout $(( $(left) - 10 )) "$CLIENT_PYTHON" benchmarks/gpu_throughput.py --server-url "http://127.0.0.1:$port" $BENCH_ARGS \
        || { say "the benchmark on $shape failed or ran out of time; the server's log:"; tail -20 "$log"; status=1; }
    [ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader 2>/dev/null
    stop_server
done
say "done (exit $status)"
exit $status
