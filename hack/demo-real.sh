#!/usr/bin/env bash
# make demo, real containers: a second, small fleet whose workload clusters'
# nodes are all real kubelets (containerd, runc, bridge CNI, CoreDNS;
# docs/real-nodes.md). A gang split over both clusters runs real containers
# and completes the rendezvous (docs/rendezvous.md); every member's log is
# read from the hub. The fleet is stopped at the end (its logs stay in DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
shoal=${SHOAL:-bin/shoal}
dir=${SHOAL_DEMO_REAL_DIR:-$HOME/.shoal/dev-real}
job=rdv-demo

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

say "Real containers: a fleet of 2 workload clusters with one real node each (kubelet v1.37.2 on containerd, runc, bridge CNI, CoreDNS)"
if "$shoal" dev kubeconfig --dir "$dir" >/dev/null 2>&1; then
  echo "stopping the real-node fleet a previous run left"
  "$shoal" dev down --dir "$dir"
fi
SHOAL_PREEMPT_AFTER=0s "$shoal" dev up --dir "$dir" --clusters 2 --profile hgx-h100 --nodes 1 --real-nodes 1 --base-port 0
cfg=$dir/shoal-config
"$shoal" --config "$cfg" queue create demo-real

say "A gang of 4 members x 4 GPUs running the rendezvous program: it fits only as 2 + 2 over the clusters' 8-GPU nodes"
manifest=$(cat <<EOF
apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: $job}
spec:
  queue: demo-real
  gang: {members: 4, gpusPerMember: 4}
  placement: {maxClusters: 2}
  rendezvous: {processesPerMember: 1}
  template:
    spec:
      containers:
      - {name: rendezvous, image: shoal.local/rendezvous:dev, imagePullPolicy: Never}
EOF
)
echo "$manifest"
echo "$manifest" | "$shoal" --config "$cfg" job submit -f -

t0=$SECONDS
phase=""
while [ $((SECONDS - t0)) -lt 180 ]; do
  phase=$("$shoal" --config "$cfg" job get "$job" -o json | sed -n 's/^    "phase": "\(.*\)",*$/\1/p' | head -1)
  case $phase in Succeeded | Failed) break ;; esac
  sleep 1
done
echo "job $job: ${phase:-unknown} after $((SECONDS - t0))s"
"$shoal" --config "$cfg" job describe "$job" | sed -n '/^Members:/,$p'

say "Every member's log, read from the hub (hub API server -> agent's virtual kubelet -> workload API server -> real kubelet)"
"$shoal" dev logs --dir "$dir" hub "$job"
if [ "$phase" != Succeeded ]; then
  echo "the real-container job did not succeed; the fleet is left up in $dir"
  exit 1
fi
if ! SHOAL=$shoal CONFIG=$cfg hack/demo-checkpoint.sh; then
  echo "the checkpoint demo failed; the fleet is left up in $dir"
  exit 1
fi
if ! SHOAL=$shoal CONFIG=$cfg hack/demo-inference.sh; then
  echo "the inference demo failed; the fleet is left up in $dir"
  exit 1
fi
"$shoal" dev down --dir "$dir"
