#!/usr/bin/env bash
# The GitOps part of `make demo`, on the running dev fleet (`shoal dev up`
# with shoal-gitserver built: every workload cluster syncs its overlay
# clusters/<name> of the fleet repository served by the local Git server).
#   1. every cluster synced at the same commit (shoal gitops status);
#   2. a change to the shared base (GPU quota +32, 64 -> 96 the first time) rolled out canary
#      first: waves 1,100%, soak 10s, followed with shoal rollout get, the
#      quota read from each workload cluster as it changes;
#   3. a broken commit (a quota the API server rejects) halts at the canary,
#      which is rolled back; the second wave is never touched. main is then
#      reverted (skip this part with DEMO_GITOPS_BROKEN=0).
#
#   hack/demo-gitops.sh            # after `shoal dev up` (hack/demo.sh calls it)
# Needs git. The repository is unauthenticated (dev only).
set -euo pipefail
cd "$(dirname "$0")/.."
shoal=${SHOAL:-bin/shoal}
eval "$("$shoal" dev env)"   # SHOAL_CONFIG, KUBECONFIG and SHOAL_FLEET_REPO of the running fleet

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

if [[ -z ${SHOAL_FLEET_REPO:-} ]]; then
  echo "the running fleet has no Git server: build shoal-gitserver (make build) and restart it (shoal dev down; shoal dev up)" >&2
  exit 1
fi
command -v git >/dev/null || { echo "git is needed to push changes to the fleet repository" >&2; exit 1; }

clusters=$("$shoal" gitops status | awk 'NR > 1 { print $1 }')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gitc() { git -C "$work/fleet" -c user.name="Shoal demo" -c user.email=demo@shoal.dev "$@"; }

# quotas: each workload cluster's GPU quota, read from its API server.
quotas() {
  local c q out=""
  for c in $clusters; do
    q=$(kubectl --kubeconfig "$("$shoal" dev kubeconfig "$c")" -n team-ml get resourcequota gpu-quota \
      -o jsonpath='{.spec.hard.requests\.nvidia\.com/gpu}' 2>/dev/null || echo "?")
    out+="$c=$q "
  done
  echo "${out% }"
}

# follow NAME [SECONDS]: print the rollout each time it or a quota changes,
# until it Succeeded or Halted.
follow() {
  local name=$1 deadline=$((SECONDS + ${2:-240})) t0=$SECONDS prev="" cur phase
  while (( SECONDS < deadline )); do
    phase=$("$shoal" rollout get "$name" -o json | sed -n 's/.*"phase": *"\([A-Za-z]*\)".*/\1/p' | head -1)
    # the table without its AGE column (field 6 of the rollout's row)
    cur="$("$shoal" rollout get "$name" | awk 'NR == 2 { $6 = "" } { print }')"$'\n'"quota: $(quotas)"
    if [[ $cur != "$prev" || $phase == Succeeded || $phase == Halted ]]; then
      printf '\n[+%ss]\n' $((SECONDS - t0)); "$shoal" rollout get "$name"; echo "quota: $(quotas)"
      prev=$cur
    fi
    [[ $phase == Succeeded || $phase == Halted ]] && return 0
    sleep 1
  done
  echo "rollout $name not finished after ${2:-240}s" >&2
  return 1
}

# rollout SHA NAME: create the rollout before pushing, so that the fleet is
# frozen at its commit and no cluster outside the current wave follows main.
rollout() {
  local sha=$1 name=$2
  echo "\$ shoal rollout create $name --revision ${sha:0:12}… --clusters region=local --waves 1,100% --soak 10s"
  "$shoal" rollout create "$name" --revision "$sha" --clusters region=local --waves 1,100% --soak 10s
  gitc push -q origin main
  echo "pushed ${sha:0:12} to main"
}

say "Every workload cluster syncs clusters/<name> of $SHOAL_FLEET_REPO (shoal gitops status)"
"$shoal" gitops status
echo "quota: $(quotas)"
c=$(echo "$clusters" | head -1)
echo; echo "\$ shoal cluster get $c   (GitOps lines)"
"$shoal" cluster get "$c" | grep '^GitOps'

git clone -q -b main "$SHOAL_FLEET_REPO" "$work/fleet"
old=$(sed -n 's/.*requests.nvidia.com\/gpu: "\([0-9]*\)".*/\1/p' "$work/fleet/base/quota.yaml")
new=$((old + 32))
say "A change to the shared base: the GPU quota of every cluster $old -> $new, canary first"
sed -i "s/requests.nvidia.com\/gpu: \"$old\"/requests.nvidia.com\/gpu: \"$new\"/" "$work/fleet/base/quota.yaml"
gitc commit -q -am "base: GPU quota $new"
sha=$(gitc rev-parse HEAD)
gitc log --oneline -1 --stat | sed 's/^/  /'
t=$SECONDS
name=quota-$new-$(date +%H%M%S)
rollout "$sha" "$name"
follow "$name"
echo "rolled out in $((SECONDS - t))s"
"$shoal" gitops status

if [[ ${DEMO_GITOPS_BROKEN:-1} == 1 ]]; then
  say "A broken change (a quota the API server rejects) stops at the canary"
  sed -i 's/requests.nvidia.com\/gpu: "[0-9]*"/requests.nvidia.com\/gpu: "lots"/' "$work/fleet/base/quota.yaml"
  gitc commit -q -am "base: broken GPU quota"
  bad=$(gitc rev-parse HEAD)
  t=$SECONDS
  name=broken-quota-$(date +%H%M%S)
  rollout "$bad" "$name"
  follow "$name"
  echo "halted in $((SECONDS - t))s; the canary was rolled back, the second wave never saw the commit"
  "$shoal" gitops status
  gitc revert --no-edit HEAD >/dev/null
  gitc push -q origin main
  echo "main reverted to the good content ($(gitc rev-parse --short HEAD)); the clusters stay pinned at ${sha:0:12}"
fi
