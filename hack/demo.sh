#!/usr/bin/env bash
# make demo: brings up the local GPU fleet (Kubernetes clusters, shoal-hub and
# one registered shoal-agent per workload cluster) and shows it working. Each
# step is a function listed in STEPS; later issues append theirs.
# The fleet stays up at the end; `bin/shoal dev down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
shoal=bin/shoal
start=$SECONDS

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

workloads() { "$shoal" dev status | awk '$2 == "workload" { print $1 }'; }

have_kubectl() { command -v kubectl >/dev/null; }

step_fleet() {
  say "Starting the local fleet: 1 hub cluster + 3 workload clusters (hgx-h100, gb200-nvl72, a100-mig)"
  if "$shoal" dev kubeconfig >/dev/null 2>&1; then   # a fleet (running or not) is recorded
    echo "stopping the fleet a previous run left"
    "$shoal" dev down
  fi
  # Preemption waits 30 minutes by default; the demo shows it at once.
  SHOAL_PREEMPT_AFTER=${SHOAL_PREEMPT_AFTER:-0s} "$shoal" dev up
}

step_nodes() {
  for c in $(workloads); do
    say "GPU nodes of $c (as GPU Feature Discovery and the device plugin label them)"
    "$shoal" dev nodes "$c" --limit 6
  done
}

step_version() {
  say "Server version (kubectl version)"
  local kc
  for c in hub $(workloads); do
    kc=$("$shoal" dev kubeconfig "$c")
    if command -v kubectl >/dev/null; then
      printf '%-8s ' "$c"; kubectl --kubeconfig "$kc" version 2>/dev/null | grep '^Server Version' || true
    fi
  done
  command -v kubectl >/dev/null || echo "(kubectl not installed: the VERSION column of shoal dev status above shows the same)"
}

step_pods() {
  say "One GPU pod per workload cluster, scheduled by that cluster's kube-scheduler"
  for c in $(workloads); do
    case $c in
      h100-*)  "$shoal" dev pod "$c" demo-gpu --resource nvidia.com/gpu --count 8 ;;
      gb200-*) "$shoal" dev pod "$c" demo-gpu --resource nvidia.com/gpu --count 4 ;;
      a100-*)  "$shoal" dev pod "$c" demo-mig --resource nvidia.com/mig-1g.10gb --count 1 ;;
    esac
  done
}

step_status() {
  say "Fleet status"
  "$shoal" dev status
}

step_hub() {
  say "The Shoal hub and one agent per workload cluster (each registered with its own one-use join token)"
  eval "$("$shoal" dev env)"   # KUBECONFIG and SHOAL_CONFIG for the steps below
  "$shoal" dev status | grep '^shoal-'
  echo "export SHOAL_CONFIG=$SHOAL_CONFIG   # the admin identity shoal-hub wrote for the CLI"
}

step_clusters() {
  say "Clusters registered on the hub (shoal cluster list)"
  "$shoal" cluster list
}

step_virtual_nodes() {
  say "Virtual nodes on the hub cluster: one per cluster and GPU shape, with the cluster's GPU capacity"
  if have_kubectl; then
    kubectl --context hub get nodes -l shoal.dev/virtual=true -L shoal.dev/cluster
    echo
  fi
  "$shoal" dev nodes hub
}

step_job() {
  say "A queue and a sample job (examples/queues.yaml, examples/job-small.yaml)"
  "$shoal" queue create -f examples/queues.yaml
  "$shoal" job submit -f examples/job-small.yaml
  "$shoal" job list
}

step_hub_pod() {
  local c node
  c=$(workloads | head -1)
  node=$("$shoal" dev nodes hub | awk -v c="shoal-$c-" 'index($1, c) == 1 && $4 > 0 { print $1; exit }')
  say "A GPU pod bound on the hub to virtual node $node runs in workload cluster $c"
  "$shoal" dev pod hub demo-hub-pod --node "$node" --count 8
  say "Its logs, read from the hub (shoal dev logs hub demo-hub-pod; kubectl --context hub -n shoal-c-$c logs demo-hub-pod)"
  echo "(hub API server -> agent kubelet endpoint -> $c's API server -> kwok's kubelet endpoint;"
  echo " no container runs on a KWOK node, so the line is KWOK's simulated container log)"
  "$shoal" dev logs hub demo-hub-pod | sed 's/^/  /'
  if have_kubectl; then
    kubectl --context hub -n "shoal-c-$c" delete pod demo-hub-pod --wait=true >/dev/null
    echo "deleted it on the hub: its pod in $c goes with it"
  fi
}

step_federated() {
  SHOAL=$shoal hack/demo-federated.sh
}

step_gitops() {
  SHOAL=$shoal hack/demo-gitops.sh
}

step_real_containers() {
  SHOAL=$shoal hack/demo-real.sh
}

STEPS=(step_fleet step_nodes step_version step_pods step_hub step_clusters step_virtual_nodes step_job step_hub_pod step_federated step_gitops step_real_containers step_status)
for s in "${STEPS[@]}"; do "$s"; done

say "Demo finished in $((SECONDS - start))s. The fleet is still up:"
echo "  eval \"\$($shoal dev env)\"                  # KUBECONFIG (one context per cluster) and SHOAL_CONFIG"
echo "  kubectl --context $(workloads | head -1) get pods -o wide"
echo "  $shoal cluster list; $shoal job list"
echo "  $shoal dev down                            # stop it"
