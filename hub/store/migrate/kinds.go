// SPDX-License-Identifier: Apache-2.0

package migrate

import "sort"

// schemas is every stored kind's schema, by kind (the owner table of
// hub/store/ownership_test.go lists the same kinds). A kind whose records
// never changed has no steps: version 1, the same as a legacy record.
var schemas = map[string]Schema{
	"jobs":              {Steps: []Step{jobMemberNamespaces}},
	"queues":            {},
	"reservations":      {},
	"ledgerclusters":    {},
	"clusters":          {},
	"clusterleases":     {},
	"clusteruids":       {},
	"clusternames":      {},
	"jointokens":        {},
	"inventories":       {},
	"rollouts":          {},
	"fairshare":         {},
	"holds":             {},
	"users":             {},
	"oidcbindings":      {},
	"pki":               {},
	"modelversions":     {},
	"inferenceservices": {},
	"gpupools":          {},
}

// For returns kind's schema; a kind the hub does not store (a test's) has
// the empty one, version 1.
func For(kind string) Schema { return schemas[kind] }

// Kinds lists the kinds with a declared schema, sorted.
func Kinds() []string {
	out := make([]string, 0, len(schemas))
	for k := range schemas {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
