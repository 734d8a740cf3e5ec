// SPDX-License-Identifier: Apache-2.0

// Package dashboards_test checks the Grafana dashboards in deploy/grafana
// against the metrics the hub and agent binaries really export.
package dashboards_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const fleetDashboard = "../../deploy/grafana/shoal-fleet.json"

// panel is the part of a Grafana panel the test reads; rows nest panels.
type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// TestFleetDashboardUsesExportedMetrics: every metric the fleet
// dashboard's PromQL (panels and template variables) selects is one the
// binaries register, with labels it has; every panel queries something.
func TestFleetDashboardUsesExportedMetrics(t *testing.T) {
	names := exported(t)
	var d dashboard
	if err := json.Unmarshal([]byte(readFile(t, fleetDashboard)), &d); err != nil {
		t.Fatalf("%s: %v", fleetDashboard, err)
	}
	if d.UID == "" {
		t.Error("dashboard has no uid")
	}
	queries := 0
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				queries++
				checkExpr(t, names, p.Title, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, q.Query)
			continue
		}
		checkSelector(t, names, "variable "+v.Name, m[1], []string{m[2]})
	}
	if queries < 20 {
		t.Errorf("only %d queries: the dashboard lost its panels", queries)
	}
}

var (
	labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	strLit      = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	rangeSel    = regexp.MustCompile(`\[[^\]]*\]`)
	grouping    = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	selector    = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}`)
	ident       = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	matcher     = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	keywords    = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)

// checkExpr finds the metric names of a PromQL expression (identifiers
// that are not functions, keywords, label names or Grafana variables) and
// checks each with its label matchers and the labels it is grouped by.
func checkExpr(t *testing.T, names map[string][]string, where, expr string) {
	t.Helper()
	if strings.TrimSpace(expr) == "" {
		t.Errorf("panel %q: empty query", where)
		return
	}
	e := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m").Replace(expr)
	e = rangeSel.ReplaceAllString(e, "")
	var grouped []string
	for _, m := range grouping.FindAllStringSubmatch(e, -1) {
		for _, l := range strings.Split(m[2], ",") {
			grouped = append(grouped, strings.TrimSpace(l))
		}
	}
	e = grouping.ReplaceAllString(e, " ")
	noStrings := strLit.ReplaceAllString(e, `""`)
	found := 0
	for _, m := range selector.FindAllStringSubmatch(noStrings, -1) {
		if m[1] == "" {
			t.Errorf("panel %q: selector without a metric name in %q", where, expr)
			continue
		}
		var labels []string
		for _, lm := range matcher.FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, lm[1])
		}
		checkSelector(t, names, where, m[1], labels)
		found++
	}
	rest := selector.ReplaceAllString(noStrings, " ")
	for _, id := range ident.FindAllString(rest, -1) {
		if strings.HasSuffix(id, "(") || slices.Contains(keywords, id) {
			continue
		}
		checkSelector(t, names, where, id, nil)
		found++
	}
	if found == 0 {
		t.Errorf("panel %q: no metric in %q", where, expr)
	}
	for _, l := range grouped {
		if l == "" || l == "le" && strings.Contains(expr, "_bucket") {
			continue
		}
		if !anyHasLabel(names, expr, l) {
			t.Errorf("panel %q: grouped by %q, which no metric of %q has", where, l, expr)
		}
	}
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// checkSelector checks that metric (or the histogram series it names) is
// exported and has every label of labels.
func checkSelector(t *testing.T, names map[string][]string, where, metric string, labels []string) {
	t.Helper()
	base, extra := metric, []string(nil)
	if _, ok := names[metric]; !ok {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(metric, suffix); ok {
				if _, ok := names[b]; ok {
					base = b
					if suffix == "_bucket" {
						extra = []string{"le"}
					}
				}
			}
		}
	}
	have, ok := names[base]
	if !ok {
		t.Errorf("panel %q: metric %s is not exported by the hub or the agent", where, metric)
		return
	}
	for _, l := range labels {
		if !slices.Contains(have, l) && !slices.Contains(extra, l) && !slices.Contains(targetLabels, l) {
			t.Errorf("panel %q: metric %s has no label %q (labels %v)", where, metric, l, have)
		}
	}
}

// anyHasLabel reports whether a metric named in expr has label l.
func anyHasLabel(names map[string][]string, expr, l string) bool {
	if slices.Contains(targetLabels, l) {
		return true
	}
	for n, labels := range names {
		if strings.Contains(expr, n) && slices.Contains(labels, l) {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
