#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzXxx in a *_test.go file) for a bounded
# time, one target at a time as go test requires, and prints per target the
# executions and whether it crashed. Exits non-zero if any target crashed
# (go writes the failing input to <pkg>/testdata/fuzz/<FuzzXxx>/: commit it
# with the fix, and it runs in every `go test` from then on).
# Knobs (environment):
#   FUZZTIME=30s       go test -fuzztime per target (a duration or Nx)
#   FUZZPARALLEL=$(nproc)  fuzzing workers per target (go test -parallel)
#   FUZZMINIMIZETIME=2s  go test -fuzzminimizetime: time spent shrinking each
#                      new interesting input (go's default of 60s stalls the
#                      count of slow targets for most of a short run)
#   FUZZ_TARGETS=.     regular expression; only targets whose name matches run
# Every target's seed corpus also runs in a plain `go test` (make test).
set -uo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-30s}
FUZZPARALLEL=${FUZZPARALLEL:-$(nproc)}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-2s}
FUZZ_TARGETS=${FUZZ_TARGETS:-.}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# "pkgdir target" lines, sorted.
mapfile -t targets < <(git ls-files --cached --others --exclude-standard '*_test.go' |
	xargs grep -H -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' |
	sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' |
	awk -v re="$FUZZ_TARGETS" '$2 ~ re' | sort -u)
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no target matches FUZZ_TARGETS=${FUZZ_TARGETS}" >&2
	exit 1
fi

echo "fuzz: ${#targets[@]} targets, ${FUZZTIME} each, ${FUZZPARALLEL} workers"
total=0
crashed=0
results=()
for t in "${targets[@]}"; do
	pkg=${t% *}
	name=${t#* }
	out="$log/$name.log"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" -parallel "$FUZZPARALLEL" "./$pkg" >"$out" 2>&1
	rc=$?
	# The last progress line holds the total: "fuzz: elapsed: 30s, execs: 123456 (4115/sec), ...".
	execs=$(grep -oE 'execs: [0-9]+' "$out" | tail -1 | grep -oE '[0-9]+' || true)
	execs=${execs:-0}
	total=$((total + execs))
	status=ok
	if [ $rc -ne 0 ]; then
		status=FAILED
		crashed=$((crashed + 1)) # a crash (failing input under testdata/fuzz) or a build error
		sed 's/^/    /' "$out" | tail -40
	fi
	results+=("$(printf '%-24s %-18s %12d  %s' "$name" "$pkg" "$execs" "$status")")
	printf '%-24s %-18s %12d  %s\n' "$name" "$pkg" "$execs" "$status"
done

echo
printf '%-24s %-18s %12s  %s\n' TARGET PACKAGE EXECS RESULT
printf '%s\n' "${results[@]}"
printf '%-24s %-18s %12d  %d failed\n' TOTAL "" "$total" "$crashed"
[ "$crashed" -eq 0 ]
