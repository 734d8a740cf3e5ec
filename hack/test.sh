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
# Each failed test with the last lines it printed (go test indents them
# under its --- FAIL line; a t.Fatal comes last), so a CI log's tail says
# why, not only what.
if grep -q '^--- FAIL' "$log"; then
	echo
	echo "==== failed tests, with the last lines they printed ===="
	awk 'function flush() { if (name != "") { print name; s = (n > 20) ? n - 20 : 0; for (i = s; i < n; i++) print buf[i]; delete buf } name = ""; n = 0 }
		/^--- FAIL/ { flush(); name = $0; next }
		name != "" && /^[ \t]/ { buf[n++] = $0; next }
		{ flush() }
		END { flush() }' "$log"
fi
rm -f "$log"
exit $rc
