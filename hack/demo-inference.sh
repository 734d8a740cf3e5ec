#!/usr/bin/env bash
# make demo, an InferenceService on real containers (docs/inference.md), on
# the real-node fleet hack/demo-real.sh started (CONFIG: its shoal config).
# Two replicas of shoal-trainer's serve mode land in the two clusters and
# answer HTTP at the addresses of the fleet endpoint list; a gateway's load
# report scales the service to 4 replicas and, once the load is gone, back
# to its minimum; a rollout to a new model version keeps 2 replicas ready
# and every endpoint then answers with the new version.
set -euo pipefail
cd "$(dirname "$0")/.."
shoal=${SHOAL:-bin/shoal}
cfg=${CONFIG:?the real-node fleet\'s shoal config}
sh() { "$shoal" --config "$cfg" "$@"; }
say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

# until_ SECONDS WHAT CMD...: retries CMD every second until it succeeds.
until_() {
  local limit=$1 what=$2 t0=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      echo "no $what within ${limit}s"
      sh service describe demo-chat || true # what it was doing, for the reader; the demo fails below
      return 1
    fi
    sleep 1
  done
  echo "$what after $((SECONDS - t0))s"
}
# field NAME KEY: a number of the service's status from `service get -o json`.
field() { sh service get demo-chat -o json | sed -n "s/^    \"$1\": \([0-9]*\),*$/\1/p" | head -1; }
ready_is() { [ "$(field readyReplicas)" = "$1" ] && [ "$(field replicas)" = "$1" ]; }
# serves MODEL: the service's MODEL column (status.model, "A → B" while a
# rollout runs) is MODEL alone, with 2 replicas, all ready.
serves() { [ "$(sh service get demo-chat | awk 'NR == 2 { print $3, $4 }')" = "$1 2/2" ] && ready_is 2; }
# ask ADDRESS: GET / of a replica over bash's /dev/tcp (no curl needed).
ask() {
  exec 3<>"/dev/tcp/$1/8000"
  printf 'GET / HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3
  tail -1 <&3
  exec 3<&-
}
ask_all() {
  sh service endpoints demo-chat --ready -o json | sed -n 's/^ *"address": "\(.*\)",*$/\1/p' | while read -r ip; do
    printf '  %s -> %s\n' "$ip" "$(ask "$ip")"
  done
}

say "Two model versions and an InferenceService: min 2, max 4 replicas of one GPU, spread over the clusters"
for v in 1.0 2.0; do
  sh model register --model demo-chat --version "$v" --artifact "s3://models/demo-chat/$v" \
    --digest "sha256:$(printf 'demo-chat-%s' "$v" | sha256sum | cut -d' ' -f1)" --framework pytorch >/dev/null
done
sh service create -f - <<SVC
apiVersion: shoal.dev/v1alpha1
kind: InferenceService
metadata: {name: demo-chat}
spec:
  queue: demo-real
  model: demo-chat@1.0
  replicas: {min: 2, max: 4}
  gpusPerMember: 1
  port: 8000
  autoscaling: {targetPerReplica: 4, scaleDownDelaySeconds: 10, metric: {name: shoal_requests_in_flight}}
  template:
    spec:
      containers:
      - name: server
        image: shoal.local/trainer:dev
        imagePullPolicy: Never
        args: [serve, --port, "8000"]
        readinessProbe: {httpGet: {path: /healthz, port: 8000}, periodSeconds: 1}
SVC
until_ 180 "2 replicas ready" ready_is 2
sh service endpoints demo-chat
echo "each endpoint, asked from this host:"
ask_all

say "A gateway reports 14 requests queued (4 per replica): the hub's scheduler places 2 more replicas"
t0=$SECONDS
sh service load demo-chat 14 >/dev/null
until_ 120 "4 replicas ready" ready_is 4
echo "load step to 4 replicas ready: $((SECONDS - t0))s"
sh service list -o wide

say "The load is gone: after the 10 s scale-down delay the service returns to its minimum"
sh service load demo-chat 0 >/dev/null
until_ 120 "back to 2 replicas" ready_is 2

say "Roll out demo-chat@2.0: one new replica at a time, never fewer than 2 ready"
sh service set-model demo-chat demo-chat@2.0
until_ 180 "rollout to demo-chat@2.0 complete" serves demo-chat@2.0
sh service describe demo-chat | sed -n '/^Rollout:/,/^Endpoints:/p' | sed '$d'
echo "each endpoint, asked from this host:"
ask_all
sh service delete demo-chat >/dev/null
