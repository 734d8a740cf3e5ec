// SPDX-License-Identifier: Apache-2.0

package dashboards_test

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/hub/app"
)

// describer is a prometheus.Registerer that keeps the descriptors of what
// is registered with it instead of collecting from it.
type describer struct{ descs map[string][]string }

var (
	fqName    = regexp.MustCompile(`fqName: "([^"]+)"`)
	varLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		s := desc.String()
		m := fqName.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		var labels []string
		if l := varLabels.FindStringSubmatch(s); l != nil && l[1] != "" {
			labels = strings.Split(l[1], ",")
		}
		d.descs[m[1]] = labels
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return false }

// exported returns the metric names and label names the hub and agent
// binaries register: every hub package's collectors (hub/app), the agent's
// (agent.Collectors) and the Go and process collectors both serve.
func exported(t *testing.T) map[string][]string {
	t.Helper()
	d := &describer{descs: map[string][]string{}}
	if err := app.RegisterMetrics(d); err != nil {
		t.Fatal(err)
	}
	d.MustRegister(agent.Collectors()...)
	d.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if len(d.descs) < 40 {
		t.Fatalf("only %d metric names described; the registries are not all read", len(d.descs))
	}
	return d.descs
}

// TestListExported logs the exported shoal_ names and their labels (go test -v), the
// list docs/metrics.md documents; it fails on a name docs/metrics.md lacks
// and on a name it documents that nothing exports.
func TestListExported(t *testing.T) {
	names := exported(t)
	var keys []string
	for n := range names {
		if strings.HasPrefix(n, "shoal_") {
			keys = append(keys, n)
		}
	}
	sort.Strings(keys)
	doc := readFile(t, "../../docs/metrics.md")
	for _, n := range keys {
		t.Logf("%s %v", n, names[n])
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("docs/metrics.md does not document %s", n)
		}
	}
	for _, m := range documented.FindAllStringSubmatch(doc, -1) {
		if _, ok := names[m[1]]; !ok {
			t.Errorf("docs/metrics.md documents %s, which neither binary exports", m[1])
		}
	}
}

// documented are the metric names docs/metrics.md writes as code.
var documented = regexp.MustCompile("`(shoal_[a-z0-9_]+)`")
