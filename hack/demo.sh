#!/usr/bin/env bash
# make demo: brings up the local GPU fleet and shows it working. Each step is a
# function listed in STEPS; later issues append theirs (hub, agents, a gang job).
# The fleet stays up at the end; `bin/shoal dev down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
shoal=bin/shoal
start=$SECONDS

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

workloads() { "$shoal" dev status | awk '$2 == "workload" { print $1 }'; }

step_fleet() {
  say "Starting the local fleet: 1 hub cluster + 3 workload clusters (hgx-h100, gb200-nvl72, a100-mig)"
  if "$shoal" dev status | grep -q '^hub '; then
    echo "stopping the fleet a previous run left"
    "$shoal" dev down
  fi
  "$shoal" dev up
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

STEPS=(step_fleet step_nodes step_version step_pods step_status)
for s in "${STEPS[@]}"; do "$s"; done

say "Demo finished in $((SECONDS - start))s. The fleet is still up:"
echo "  export KUBECONFIG=\$($shoal dev kubeconfig)   # one context per cluster"
echo "  kubectl --context $(workloads | head -1) get pods -o wide"
echo "  $shoal dev down                            # stop it"
