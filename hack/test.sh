#!/usr/bin/env bash
# Runs go test with the given flags and prints a one-screen summary at the end.
# Integration tests find the Kubernetes binaries through $SHOAL_CACHE.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
start=$SECONDS
go test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo
echo "==== test summary ($((SECONDS - start))s) ===="
ok=$(grep -c '^ok ' "$log"); failed=$(grep -c '^FAIL\s' "$log"); none=$(grep -c 'no test files' "$log")
echo "packages ok: $ok  failed: $failed  without tests: $none"
grep -E '^(FAIL|--- FAIL)' "$log" | head -40
rm -f "$log"
exit $rc
