#!/usr/bin/env bash
# make verify: gofmt, golangci-lint (import-direction rules), go vet, and
# generated code unchanged. Every step runs; the exit code says if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
step() { echo "verify: $*"; }

step "gofmt"
bad=$(gofmt -l $(git ls-files '*.go'; git ls-files --others --exclude-standard '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; fail=1; fi

step "go vet"
go vet ./... || fail=1

step "golangci-lint"
golangci-lint run ./... || fail=1

step "generated code up to date"
hack/generate.sh >/dev/null || fail=1
if ! git diff --quiet -- apis/; then
  echo "generated code is stale: run 'make generate' and commit"; git diff --stat -- apis/; fail=1
fi

[ $fail = 0 ] && echo "verify: OK" || echo "verify: FAILED"
exit $fail
