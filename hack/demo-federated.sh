#!/usr/bin/env bash
# The federated part of `make demo`: the main job end to end on the running
# dev fleet (`shoal dev up`: hub + h100, gb200 and a100 clusters, shoal-hub
# and one agent per cluster). Queues are created, then several jobs:
#   - a rack-local gang (6×8 H100 GPUs, topology required: rack),
#   - a gang that must span two clusters (40×4 GPUs on H100 or GB200, maxClusters 2),
#   - one too large for the fleet, waiting with the scheduler's reason,
#   - a spot job on the A100s preempted by a production job;
# each is shown running or waiting (members with cluster, node, domain, and
# the two-phase conditions), then everything is cancelled and cleaned up.
#
# Preemption is shown when shoal-hub was started with SHOAL_PREEMPT_AFTER
# (e.g. `SHOAL_PREEMPT_AFTER=0s shoal dev up`); otherwise the placement
# engine lets a gang preempt only after waiting 30 minutes, and the
# production job is shown waiting.
#
#   hack/demo-federated.sh            # after `shoal dev up` (hack/demo.sh calls it)
set -euo pipefail
cd "$(dirname "$0")/.."
shoal=${SHOAL:-bin/shoal}
eval "$("$shoal" dev env)"   # SHOAL_CONFIG and KUBECONFIG of the running fleet

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

phase() { "$shoal" job get "$1" | awk 'NR == 2 { print $3 }'; }

# wait_phase JOB PHASE [SECONDS]: poll until the job reaches PHASE.
wait_phase() {
  local job=$1 want=$2 deadline=$((SECONDS + ${3:-90})) p
  while (( SECONDS < deadline )); do
    p=$(phase "$job" || true)
    [[ $p == "$want" ]] && { echo "$job: $p"; return 0; }
    sleep 1
  done
  echo "$job: still ${p:-unknown} after ${3:-90}s (wanted $want)" >&2
  "$shoal" job describe "$job" >&2 || true
  return 1
}

# job NAME QUEUE PRIORITY MEMBERS GPUS PLACEMENT-YAML [GRACE]: submit one job.
job() {
  "$shoal" job submit -f - <<YAML
apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  queue: $2
  priorityClass: $3
  gang: {members: $4, gpusPerMember: $5}
  placement: $6
  preemption: {gracePeriodSeconds: ${7:-10}}
  template:
    spec:
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:25.01-py3
        command: [torchrun, train.py]
YAML
}

JOBS=(demo-rack demo-two-clusters demo-too-large demo-spot demo-prod)

cleanup() {
  say "Cancelling every demo job: members are removed on the hub and in every workload cluster"
  "$shoal" job cancel "${JOBS[@]}" >/dev/null 2>&1 || true
  local deadline=$((SECONDS + 60)) left
  while (( SECONDS < deadline )); do
    left=$(kubectl --context hub get pods -A -l "shoal.dev/job in ($(IFS=,; echo "${JOBS[*]}"))" --no-headers 2>/dev/null | wc -l || echo 0)
    (( left == 0 )) && break
    sleep 1
  done
  echo "member pods left on the hub: ${left:-0}"
  "$shoal" job list
  if (( ${left:-0} > 0 )); then
    echo "demo: cancelled jobs' member pods were still on the hub after 60 s" >&2
    exit 1
  fi
}
trap cleanup EXIT

say "Queues: demo/research (training), demo/serving (production), demo/scavenger (spot)"
for q in demo demo/research demo/serving demo/scavenger; do
  "$shoal" queue get "$q" >/dev/null 2>&1 || "$shoal" queue create "$q" >/dev/null  # a rerun finds them
done
"$shoal" queue list

say "A rack-local gang: 6 members × 8 H100 GPUs, every member in one rack (the earlier demo pods hold a node in each rack)"
job demo-rack demo/research training 6 8 \
  '{gpuProducts: [NVIDIA-H100-80GB-HBM3], topology: {required: rack}}'
wait_phase demo-rack Running
"$shoal" job describe demo-rack

say "A gang that must span two clusters: 40 × 4 GPUs (more than any one cluster has free), maxClusters 2"
job demo-two-clusters demo/research training 40 4 \
  '{maxClusters: 2, gpuProducts: [NVIDIA-H100-80GB-HBM3, NVIDIA-GB200]}'
wait_phase demo-two-clusters Running
"$shoal" job get demo-two-clusters
"$shoal" job describe demo-two-clusters | sed -n '/Conditions:/,/Members:/p'

say "A job too large for any cluster: 100 × 8 GPUs waits, with the scheduler's reason"
job demo-too-large demo/research batch 100 8 '{}'
sleep 3
"$shoal" job describe demo-too-large | sed -n '/Conditions:/,$p'

say "A spot job takes every whole A100 GPU (16 × 2)"
job demo-spot demo/scavenger spot 16 2 '{gpuProducts: [NVIDIA-A100-SXM4-80GB]}' 5
wait_phase demo-spot Running

say "A production job needs 4 × 2 A100 GPUs: the spot job is preempted (5 s grace to checkpoint)"
job demo-prod demo/serving production 4 2 '{gpuProducts: [NVIDIA-A100-SXM4-80GB]}'
if wait_phase demo-prod Running 60; then
  "$shoal" job describe demo-spot | sed -n '/Conditions:/,/Members:/p'
else
  echo "(start shoal-hub with SHOAL_PREEMPT_AFTER=0s to see the preemption now)"
fi

say "Every demo job"
"$shoal" job list
kubectl --context hub get pods -A -l shoal.dev/job -o wide 2>/dev/null | head -12 || true
