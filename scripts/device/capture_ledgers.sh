#!/usr/bin/env bash
# Real-GPU captures for the energy ledger and GPU-to-job attribution, in about a minute.
#
# On a machine with an NVIDIA GPU, torch and nvidia-ml-py, from the repository root:
#   OUT=/tmp/ledger-capture bash scripts/device/capture_ledgers.sh
# It writes under $OUT (tests/fixtures/h100/README.md describes what was kept):
#   inventory.txt            nvidia-smi -q and a --query-gpu CSV of link, limits and memory
#   energy-under-load.json   NVML every 100 ms for 40 s, bf16 GEMMs from 10 s to 30 s
#   gpu-process-cgroup.json  NVML's processes and their /proc cgroup texts mid-load
#   capture.log              what the scripts printed
# Fails soft: without a GPU every file is still written, with the errors in it.
# The whole run is bounded by CAPTURE_TIMEOUT seconds (240 by default).
set -u
OUT=${OUT:?set OUT to a folder}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
LOG="$OUT/capture.log"
: >"$LOG"

QUERY=pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,power.limit,enforced.power.limit,memory.total,memory.reserved,driver_version,serial,uuid,pci.bus_id

inventory() {
  echo "## date -u"; date -u +%Y-%m-%dT%H:%M:%SZ
  echo "## uname -r"; uname -r
  echo "## versions"
  timeout 60 "$PY" -c 'import sys; print("python", sys.version.split()[0])
try:
    import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)
except Exception as e: print("torch", type(e).__name__, e)
try:
    from importlib.metadata import version; print("nvidia-ml-py", version("nvidia-ml-py"))
except Exception as e: print("nvidia-ml-py", type(e).__name__, e)' 2>&1
  echo "## nvidia-smi --query-gpu=$QUERY --format=csv"
  if ! timeout 30 nvidia-smi --query-gpu="$QUERY" --format=csv 2>&1; then
    echo "## (the whole query failed; one field at a time)"
    for field in ${QUERY//,/ }; do
      printf '%s: ' "$field"; timeout 30 nvidia-smi --query-gpu="$field" --format=csv,noheader 2>&1
    done
  fi
  echo "## nvidia-smi -q"
  timeout 60 nvidia-smi -q 2>&1
  echo "## exit $?"
}

main() {
  inventory >"$OUT/inventory.txt"
  echo "inventory: $(wc -l <"$OUT/inventory.txt") lines"
  timeout -k 10 "$(( ${CAPTURE_TIMEOUT:-240} - 50 ))" "$PY" "$HERE/capture_ledgers.py" --out "$OUT" \
    --seconds "${CAPTURE_SECONDS:-40}" --load-start "${LOAD_START:-10}" --load-end "${LOAD_END:-30}"
  echo "capture_ledgers.py exit $?"
  ls -l "$OUT"
}

timeout -k 5 "${CAPTURE_TIMEOUT:-240}" bash -c "$(declare -f inventory main); OUT='$OUT' PY='$PY' HERE='$HERE' QUERY='$QUERY' main" 2>&1 | tee -a "$LOG"
