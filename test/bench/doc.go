// SPDX-License-Identifier: Apache-2.0

// Package bench measures what observability costs the hub: CPU and memory
// of a real shoal-hub with metrics scraped and tracing on against the same
// hub with neither, on the demo fleet's shape, and the number of metric
// series of the demo fleet (from the running hub's registry) and of a
// fleet of 100 clusters (from the label cardinalities, Series).
//
//	go test ./test/bench -run '^$' -bench ObservabilityCost -benchtime 1x
package bench
