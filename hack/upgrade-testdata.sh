#!/usr/bin/env bash
# Regenerates hub/store/migrate/testdata/<commit>/: the job records that
# shoal-hub of the previous release (test/integration/upgrade
# PreviousRelease) stores, as the upgrade test leaves them when it stops
# that hub. hub/store/migrate's TestPreviousReleaseRecords migrates them.
# Needs the Kubernetes binaries (make k8s-bin); builds the previous release
# once into $SHOAL_CACHE/upgrade/<commit>.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(sed -n 's/^const PreviousRelease = "\([0-9a-f]*\)"$/\1/p' test/integration/upgrade/main_test.go)
[ -n "$commit" ] || { echo "no PreviousRelease in test/integration/upgrade/main_test.go" >&2; exit 1; }
out=hub/store/migrate/testdata/${commit:0:7}
rm -rf "$out"
SHOAL_UPGRADE_TESTDATA=$PWD/$out go test -count=1 -timeout 15m -run 'TestUpgradeFromPreviousRelease$' ./test/integration/upgrade/
ls "$out"/jobs
