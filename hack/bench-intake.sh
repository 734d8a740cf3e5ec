#!/usr/bin/env bash
# Measures the job intake through the real shoal-hub (its hub
# kube-apiserver dry-runs the pod templates, its embedded etcd fsyncs) with
# test/bench BenchmarkIntake and writes one JSON file (machine, commit,
# inputs, figures per stage) to bench/results/intake-<time>.json.
# Knobs (environment), passed to the benchmark:
#   INTAKE_JOBS=20000       jobs per mode, from an empty store
#   INTAKE_CLIENTS=16       concurrent clients, one connection each
#   INTAKE_BATCHES=1,100    modes: 1 is Jobs/Submit, more Jobs/SubmitBatch of that many (empty: none)
#   INTAKE_STREAMS=100      modes: Jobs/SubmitStream, that many jobs per message (empty: none)
#   INTAKE_STAGES=10        stages (figures are per stage, as the store grows)
#   INTAKE_MAX_DURATION=10m a mode stops after the stage that passes it
#   INTAKE_CORDON=1         cordon the cluster first: no gang starts beside the intake (the hub's own figures)
#   INTAKE_CPU_PROFILE=20s  a CPU profile of the hub that long from each mode's start
#                           (needs SHOAL_BENCH_HUB_ARGS=--profiling), in bench/results
#   INTAKE_FLEET_DIR=DIR    the fleet in DIR, its logs kept (run one mode: each starts afresh there)
set -euo pipefail
cd "$(dirname "$0")/.."

out=bench/results
mkdir -p "$out"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
dirty=false
git diff --quiet HEAD -- hub cmd test/bench 2>/dev/null || dirty=true
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown)
load=$(cut -d' ' -f1 /proc/loadavg)

echo "== intake through the real shoal-hub (one fleet per mode)" >&2
SHOAL_BENCH_OUT="$tmp" go test ./test/bench -run '^$' -bench '^BenchmarkIntake$' -benchtime 1x -timeout 60m -v \
  | tee "$tmp/bench.txt" | grep -E 'jobs/s|stored|transactions|guard' >&2

python3 - "$tmp/intake.json" "$out/intake-$stamp.json" <<PY
import json, sys
r = json.load(open(sys.argv[1]))
r.update({"commit": "$commit", "dirty": "$dirty" == "true", "cpu": "$cpu", "cores": $(nproc), "loadBefore": $load,
          "time": "$stamp", "dryRun": True, "fsync": True})
json.dump(r, open(sys.argv[2], "w"), indent=2)
PY
echo "wrote $out/intake-$stamp.json" >&2
