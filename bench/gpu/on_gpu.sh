#!/usr/bin/env bash
# Everything gpufleet can only learn on a real GPU node, in one run (about 4 minutes).
#
# Run on a machine with an NVIDIA GPU, torch and nvidia-ml-py, from the repository root:
#   OUT=/tmp/gpu-check bash bench/gpu/on_gpu.sh
# It writes under $OUT:
#   nvidia-smi.xml    nvidia-smi -q -x before the run (the oracle for identity and limits)
#   agent.jsonl       the real agent's protocol-v1 lines over real NVML, with the GPU busy
#   smi.csv           nvidia-smi --query-gpu once a second over the same seconds (oracle)
#   probes.jsonl      the probe program, suite full, twice (second run after a warm GPU)
#   torch_ref.txt     a plain torch reference for the probe figures (bf16/tf32 GEMM, d2d copy)
#   cpu.txt           CPU seconds of the agent and of nvidia-smi over the same window
#   sysfs.txt         what the node's sysfs shows of InfiniBand and network devices
# bench/gpu/on_gpu_compare.py reads these files back on the development machine.
set -u
OUT=${OUT:?set OUT to an empty folder}
PY=${PY:-python3}
SECONDS_AGENT=${SECONDS_AGENT:-150}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

nvidia-smi -q -x >"$OUT/nvidia-smi.xml" 2>&1
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
{
  echo "## /sys/class/infiniband"; ls -la /sys/class/infiniband 2>&1
  echo "## /sys/class/net"; ls -la /sys/class/net 2>&1
  for dev in /sys/class/net/*; do echo "## $dev"; cat "$dev/operstate" "$dev/speed" 2>&1; done
  echo "## python"; $PY -c 'import sys, torch, pynvml; print(sys.version); print(torch.__version__, torch.version.cuda); print(pynvml.__file__)' 2>&1
} >"$OUT/sysfs.txt"

cpu_of() {  # utime+stime of a pid, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}

# The agent and nvidia-smi's own 1 s query run side by side over the same seconds.
$PY -m collectors.agent stream --interval 1 --slow-interval 10 >"$OUT/agent.jsonl" 2>"$OUT/agent.err" &
AGENT=$!
nvidia-smi --query-gpu=timestamp,index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.mem,pcie.link.gen.current,pcie.link.width.current,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.volatile.total,retired_pages.pending,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure,clocks_event_reasons.active,fan.speed,pstate \
  --format=csv,nounits -lms 1000 >"$OUT/smi.csv" 2>&1 &
SMI=$!
START=$(date +%s)

# Load for the agent to see: the probe suite twice (GEMM, HBM, SDC, PCIe, NCCL), then
# a torch reference and 40 s of back-to-back GEMMs (GPU busy, power near its limit), then
# idle until the window ends, so the capture has busy-to-idle edges.
for run in 1 2; do
  echo "{\"type\": \"run\", \"run\": $run}" >>"$OUT/probes.jsonl"
  $PY -m probes.kernels --suite full --timeout 150 >>"$OUT/probes.jsonl" 2>>"$OUT/probes.err"
  echo "{\"type\": \"exit\", \"run\": $run, \"status\": $?}" >>"$OUT/probes.jsonl"
done
$PY bench/gpu/on_gpu_reference.py --burn 40 >"$OUT/torch_ref.txt" 2>&1

while [ $(( $(date +%s) - START )) -lt "$SECONDS_AGENT" ]; do sleep 1; done
{
  echo "agent_ticks $(cpu_of $AGENT) clk_tck $(getconf CLK_TCK) wall_s $(( $(date +%s) - START ))"
  echo "nvidia_smi_ticks $(cpu_of $SMI)"
} >"$OUT/cpu.txt"
kill -TERM $AGENT $SMI
wait $AGENT; echo "agent_exit $?" >>"$OUT/cpu.txt"
wait $SMI 2>/dev/null
$PY -m collectors.agent processes >"$OUT/processes.jsonl" 2>&1
echo "on_gpu: done"
cat "$OUT/cpu.txt" "$OUT/torch_ref.txt"
grep -c . "$OUT/agent.jsonl" "$OUT/smi.csv" "$OUT/probes.jsonl"
# One archive: the device tool returns at most eight files.
tar czf /tmp/gpu-check.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/gpu-check.tgz "$OUT/"
