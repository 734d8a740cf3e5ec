#!/usr/bin/env bash
# make demo, checkpoints on real containers (docs/checkpoints.md), on the
# real-node fleet hack/demo-real.sh started (CONFIG: its shoal config; its
# hub runs with SHOAL_PREEMPT_AFTER=0s). A spot training job (shoal-trainer)
# prints checkpoint lines that its agent passes to the hub; a production job
# preempts it; the trainer saves on the notice and exits, well within its
# 120 s grace; placed again, it resumes from that checkpoint; a model
# version registered from it traces back to the job and the checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
shoal=${SHOAL:-bin/shoal}
cfg=${CONFIG:?the real-node fleet\'s shoal config}
q=demo-real
sh() { "$shoal" --config "$cfg" "$@"; }
say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

# phase JOB and checkpoint_step JOB read `shoal job get JOB -o wide`: PHASE
# is its third column, CHECKPOINT (the latest step, or -) its last.
phase() { sh job get "$1" -o wide | awk 'NR == 2 { print $3 }'; }
checkpoint_step() { sh job get "$1" -o wide | awk 'NR == 2 { print $NF }'; }

# until_ SECONDS WHAT CMD...: retries CMD every second until it succeeds.
until_() {
  local limit=$1 what=$2 t0=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      echo "no $what within ${limit}s"
      return 1
    fi
    sleep 1
  done
  echo "$what after $((SECONDS - t0))s"
}
phase_is() { [ "$(phase "$1")" = "$2" ]; }
has_checkpoint() { [[ "$(checkpoint_step "$1")" =~ ^[0-9]+$ ]]; }

trainer() { # NAME PRIORITY GRACE ARGS...
  local name=$1 prio=$2 grace=$3
  shift 3
  local args
  args=$(printf '"%s", ' "$@")
  sh job submit -f - <<JOB
apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: $name}
spec:
  queue: $q
  priorityClass: $prio
  preemption: {gracePeriodSeconds: $grace}
  gang: {members: 1, gpusPerMember: 8}
  template:
    spec:
      containers:
      - {name: trainer, image: shoal.local/trainer:dev, imagePullPolicy: Never, args: [${args%, }]}
JOB
}

say "A spot training job (shoal-trainer, one 8-GPU member): member 0 prints SHOAL_CHECKPOINT lines, its agent passes them to the hub"
trainer ckpt-train spot 120 --step-every 200ms --checkpoint-every 5 --exit-on-notice
until_ 180 "ckpt-train Running" phase_is ckpt-train Running
until_ 60 "a checkpoint reported by the agent" has_checkpoint ckpt-train
sh job describe ckpt-train | sed -n '/^Checkpoint:/,/^Conditions:/p' | sed '$d'

say "Production jobs take both nodes: the second must preempt the spot trainer (grace 120 s)"
trainer ckpt-filler production 30 --checkpoint-every 0
until_ 180 "ckpt-filler Running" phase_is ckpt-filler Running
t0=$SECONDS
trainer ckpt-urgent production 30 --until 10 --checkpoint-every 0
until_ 110 "ckpt-urgent Running: the trainer saved on the notice and exited" phase_is ckpt-urgent Running
echo "from submitting the production job to its member running: $((SECONDS - t0))s, against the trainer's 120 s grace"
echo "ckpt-train's latest checkpoint, taken after the notice:"
sh job describe ckpt-train | sed -n '/^Checkpoint:/,/^Conditions:/p' | sed '$d'

say "The production job ends; the trainer is placed again and resumes from that checkpoint"
until_ 120 "ckpt-urgent Succeeded" phase_is ckpt-urgent Succeeded
until_ 180 "ckpt-train Running again" phase_is ckpt-train Running
resumed() { "$shoal" dev logs --dir "$(dirname "$cfg")" hub ckpt-train 2>/dev/null | grep -q 'resume: file'; }
until_ 30 "the new member's resume lines" resumed
"$shoal" dev logs --dir "$(dirname "$cfg")" hub ckpt-train | grep 'resume:' | sed 's/^/  /'

say "A model version made from this training, and its lineage (docs/models.md)"
sh model register --model demo-model --version 1.0 --artifact s3://models/demo-model/1.0 \
  --digest "sha256:$(printf 'demo-model-1.0' | sha256sum | cut -d' ' -f1)" --framework pytorch --job ckpt-train
sh model lineage demo-model@1.0
sh job cancel ckpt-train ckpt-filler >/dev/null
