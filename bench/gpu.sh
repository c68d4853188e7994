#!/usr/bin/env bash
# Every benchmark, one after another, with its RESULT line collected in one file.
#
#   bench/gpu.sh                       # --device cuda, sizes that fit in under 9 minutes on one GPU
#   bench/gpu.sh --device cpu --tiny   # smoke: tiny sizes on CPU (checks that every benchmark runs)
#   bench/gpu.sh --out results.txt     # where the RESULT lines go (default bench-results-<device>.txt)
#
# Benchmarks marked cpu: (start-up, conversion, storage) run without --device.
# Each benchmark gets its own time limit (and all of them together at most $TOTAL_S: 540 s, or 1500 s with --tiny); one that fails or runs out of time is recorded as
# "FAILED <name> rc=<rc>" with the tail of its log, and the script goes on. Logs: <out>.logs/.
set -uo pipefail
cd "$(dirname "$0")/.."

device=cuda tiny=0 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --tiny) tiny=1; shift ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: bench/gpu.sh [--device cuda|cpu] [--tiny] [--out FILE]" >&2; exit 2 ;;
  esac
done
out=${out:-bench-results-$device.txt}
logs="$out.logs"
mkdir -p "$logs"
py=${PYTHON:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

if [ "$tiny" = 1 ]; then
  limit=300
  runs=(
    "encoder_cache --answers 2"
    "overlap --requests 2 --rounds 1"
    "admission --seeds 1 --requests 10"
    "embed_service --clients 2 --per-client 1 --batch 2 --rounds 1 --models colqwen2,clip --skip-sizes"
    "embed_peer --scenarios 2x1 --rounds 1 --seconds 1"
    "pipeline --docs 1 --rounds 1 --spaces text"
    "serving --compare-admission --num-prompts 6 --rate 4 --rounds 1"
    "retrieval --pages 500 --queries 40 --tune 10 --rounds 1"
    "cpu:cli_startup --rounds 1"
    "cpu:convert --rounds 1"
    "cpu:storage --limit 1 --rounds 1"
  )
else
  limit=120
  runs=(
    "encoder_cache --quick"
    "overlap --quick --threads 8"
    "admission --quick"
    "embed_service --quick"
    "embed_peer --quick"
    "pipeline --quick"
    "serving --compare-admission --quick"
    "retrieval --pages 2000 --rounds 5"
    "cpu:cli_startup --rounds 5"
    "cpu:convert --rounds 5"
    "cpu:storage --rounds 5"
  )
fi

{ echo "# bench/gpu.sh --device $device $([ "$tiny" = 1 ] && echo --tiny) $(date -u +%FT%TZ)"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  echo "# $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"; } > "$out"
total=${TOTAL_S:-$([ "$tiny" = 1 ] && echo 1500 || echo 540)}
t0=$(date +%s)
for spec in "${runs[@]}"; do
  dev=(--device "$device")
  if [ "${spec#cpu:}" != "$spec" ]; then spec=${spec#cpu:}; dev=(); fi  # CPU-only: no --device option
  name=${spec%% *}
  start=$(date +%s)
  left=$(( total - (start - t0) ))
  if [ "$left" -lt 20 ]; then echo "SKIPPED $name: total time limit reached" | tee -a "$out"; continue; fi
  timeout "$(( left < limit ? left : limit ))" "$py" -m bench.$spec "${dev[@]}" > "$logs/$name.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  line=$(grep '^RESULT ' "$logs/$name.log" | tail -1)
  if [ "$rc" = 0 ] && [ -n "$line" ]; then
    echo "$name (${took}s): $line" | tee -a "$out"
  else
    echo "FAILED $name rc=$rc (${took}s): $(tail -3 "$logs/$name.log" | tr '\n' ' ' | cut -c1-400)" | tee -a "$out"
  fi
done
echo "RESULT lines in $out"
