#!/usr/bin/env bash
# Runs Shoal's benchmarks and writes one JSON file (machine, commit, inputs,
# figures) to bench/results/, printing short tables on the way:
#   1. placement decision benchmarks (go test -bench on federation/placement,
#      one core, medians over BENCH_COUNT repeats);
#   2. the fleet simulator: Shoal and the baselines over the same seeded
#      fleets, loads, job mix and node failures (cmd/shoal-sim).
# Knobs (environment):
#   BENCH_COUNT=5          repeats of each Go benchmark (medians are reported)
#   BENCH_TIME=300x        go test -benchtime
#   SIM_FLEETS=F-S:168h,F-M:48h   fleet:horizon pairs; F-L:48h adds the big fleet
#                          (about 8 more minutes per load on 2 cores; shorter horizons
#                          do not reach steady state)
#   SIM_LOADS=0.7,0.9,1.1  offered loads
#   SIM_STRATEGIES=…       default: shoal, shoal-no-preemption and the four baselines
#   SIM_SEED=1  SIM_FAILURES=0.01 (fraction of nodes failing per day)
#   SIM_CHECKPOINT_ON_PREEMPT=1  victims save their work in their grace period
#                          (default: they lose the work since their last hourly checkpoint)
#   SIM_PARALLEL=$(nproc)  simulator runs at once
#   BENCH_XL=1             also time decisions on F-XL (100 clusters, 800,000 GPUs) and on its
#                          first 10/25/50/100 clusters (BenchmarkPlaceScale; a few minutes more)
#   SKIP_DECISION=1 / SKIP_SIM=1 to run one half only
# Defaults take about 5–8 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_COUNT=${BENCH_COUNT:-5}
BENCH_TIME=${BENCH_TIME:-300x}
SIM_FLEETS=${SIM_FLEETS:-F-S:168h,F-M:48h}
SIM_LOADS=${SIM_LOADS:-0.7,0.9,1.1}
SIM_STRATEGIES=${SIM_STRATEGIES:-shoal,shoal-no-preemption,shoal-topology-off,fifo-first-fit,summed-capacity,one-cluster-per-job}
SIM_SEED=${SIM_SEED:-1}
SIM_FAILURES=${SIM_FAILURES:-0.01}
SIM_PARALLEL=${SIM_PARALLEL:-$(nproc)}
SIM_CHECKPOINT_ON_PREEMPT=${SIM_CHECKPOINT_ON_PREEMPT:-}
ckpt=false
[[ -n "$SIM_CHECKPOINT_ON_PREEMPT" ]] && ckpt=true

out=bench/results
mkdir -p "$out"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
dirty=false
git diff --quiet HEAD -- federation cmd/shoal-sim hack/bench.sh 2>/dev/null || dirty=true
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown)

go build -o "$tmp/shoal-sim" ./cmd/shoal-sim

decision=null
if [[ -z "${SKIP_DECISION:-}" ]]; then
  echo "== placement decision benchmarks (one core, median of $BENCH_COUNT)" >&2
  SHOAL_BENCH_XL=${BENCH_XL:-} go test ./federation/placement -run '^$' -bench 'Place|Throughput' -benchmem -cpu 1 \
    -count "$BENCH_COUNT" -benchtime "$BENCH_TIME" >"$tmp/bench.txt"
  # A whole cycle rebuilds and refills the fleet per iteration (untimed but slow): few iterations.
  go test ./federation/placement -run '^$' -bench 'ScheduleCycle' -benchmem -cpu 1 \
    -count "$BENCH_COUNT" -benchtime 3x >>"$tmp/bench.txt"
  "$tmp/shoal-sim" -parse-bench "$tmp/bench.txt" -out "$tmp/decision.json"
  decision=$(cat "$tmp/decision.json")
fi

simulation=null
if [[ -z "${SKIP_SIM:-}" ]]; then
  echo "== fleet simulator ($SIM_FLEETS; loads $SIM_LOADS; seed $SIM_SEED)" >&2
  "$tmp/shoal-sim" -fleets "$SIM_FLEETS" -loads "$SIM_LOADS" -strategies "$SIM_STRATEGIES" \
    -seed "$SIM_SEED" -failures "$SIM_FAILURES" -checkpoint-on-preempt="$ckpt" \
    -parallel "$SIM_PARALLEL" -out "$tmp/sim.json" 2>/dev/null
  simulation=$(cat "$tmp/sim.json")
fi

file="$out/bench-$stamp.json"
cat >"$file" <<JSON
{
  "date": "$stamp",
  "commit": "$commit",
  "dirty": $dirty,
  "machine": {"cpu": "$cpu", "cores": $(nproc), "os": "$(uname -sr)", "go": "$(go env GOVERSION)"},
  "inputs": {
    "benchCount": $BENCH_COUNT, "benchTime": "$BENCH_TIME", "benchXL": "${BENCH_XL:-}",
    "simFleets": "$SIM_FLEETS", "simLoads": "$SIM_LOADS", "simStrategies": "$SIM_STRATEGIES",
    "simSeed": $SIM_SEED, "simFailuresPerNodeDay": $SIM_FAILURES, "simCheckpointOnPreempt": $ckpt
  },
  "decision": $decision,
  "simulation": $simulation
}
JSON
echo "wrote $file" >&2
