#!/usr/bin/env bash
# make verify: gofmt, golangci-lint (import-direction rules), go vet,
# generated code unchanged, and the SPDX line on every Go file. Every step
# runs; the exit code says if any failed. It installs the tools it needs
# (hack/tools.sh, pinned and cached), so it runs on a fresh machine.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="${SHOAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shoal}/tools/bin:$PATH"
fail=0
step() { echo "verify: $*"; }

step "tools"
hack/tools.sh || { echo "verify: cannot install the tools"; exit 1; }

step "gofmt"
bad=$(gofmt -l $(git ls-files '*.go'; git ls-files --others --exclude-standard '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; fail=1; fi

step "go vet"
go vet ./... || fail=1

step "golangci-lint"
golangci-lint run ./... || fail=1

# The kustomize bases as committed, before hack/generate.sh (which renders
# them too) runs in the next step: compared after the chart step below.
bases() { find deploy/hub deploy/agent -type f -print0 | sort -z | xargs -0 sha256sum; }
bases_before=$(bases)

step "generated code up to date"
# Compare apis/ and the REST gateway and OpenAPI document (hub/rest) before
# and after generating (new, changed and removed files), so that
# uncommitted work there is not taken for stale output.
snapshot() { find apis hub/rest/internal hub/rest/openapi.json -type f -print0 2>/dev/null | sort -z | xargs -0 sha256sum; }
before=$(snapshot)
if hack/generate.sh >/dev/null; then
  stale=$(diff <(echo "$before") <(snapshot) | sed -n 's/^[<>] [0-9a-f]*  //p' | sort -u)
  if [ -n "$stale" ]; then
    echo "generated code is stale: run 'make generate' and commit; it changed:"; echo "$stale"; fail=1
  fi
else
  echo "make generate failed"; fail=1
fi

step "SPDX line"
hack/spdx.sh -check || fail=1

step "kustomize bases generated from the charts"
# deploy/hub and deploy/agent are what hack/chartgen renders from
# deploy/charts (make generate); compared as committed (before the step
# above, which renders them too) and after.
if go run ./hack/chartgen >/dev/null; then
  stale=$(diff <(echo "$bases_before") <(bases) | sed -n 's/^[<>] [0-9a-f]*  //p' | sort -u)
  if [ -n "$stale" ]; then
    echo "the kustomize bases are stale: run 'make generate' and commit; it changed:"; echo "$stale"; fail=1
  fi
else
  echo "hack/chartgen failed"; fail=1
fi

[ $fail = 0 ] && echo "verify: OK" || echo "verify: FAILED"
exit $fail
