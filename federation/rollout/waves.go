// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Step is one entry of a wave spec: an absolute cluster count or a
// percentage of the fleet, both cumulative.
type Step struct {
	Count   int `json:"count,omitempty"`
	Percent int `json:"percent,omitempty"`
}

// InvalidWavesError reports a wave spec that cannot be parsed.
type InvalidWavesError struct {
	Spec   string
	Reason string
}

func (e *InvalidWavesError) Error() string {
	return fmt.Sprintf("invalid waves %q: %s", e.Spec, e.Reason)
}

// ParseWaves parses a comma-separated cumulative spec such as "1,25%,100%".
// Entries must not shrink (a count after a percentage is allowed; the plan
// takes the larger of the cumulative targets). An empty spec means "100%".
func ParseWaves(spec string) ([]Step, error) {
	if strings.TrimSpace(spec) == "" {
		return []Step{{Percent: 100}}, nil
	}
	var steps []Step
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		pct := strings.HasSuffix(f, "%")
		n, err := strconv.Atoi(strings.TrimSuffix(f, "%"))
		switch {
		case err != nil:
			return nil, &InvalidWavesError{Spec: spec, Reason: fmt.Sprintf("%q is not a number or percentage", f)}
		case n <= 0:
			return nil, &InvalidWavesError{Spec: spec, Reason: fmt.Sprintf("%q must be positive", f)}
		case pct && n > 100:
			return nil, &InvalidWavesError{Spec: spec, Reason: fmt.Sprintf("%q is over 100%%", f)}
		case pct:
			steps = append(steps, Step{Percent: n})
		default:
			steps = append(steps, Step{Count: n})
		}
	}
	return steps, nil
}

// Plan splits the clusters (sorted by name, duplicates dropped) into waves.
// Wave i holds the clusters added by step i, so the union of waves 0..i is
// the cumulative target of step i. Steps that add nobody are dropped, and a
// final wave takes any clusters the last step left out, so every cluster is
// in exactly one wave.
func Plan(clusters []string, steps []Step) [][]string {
	names := uniqueSorted(clusters)
	var waves [][]string
	done := 0
	for _, s := range steps {
		target := s.Count
		if s.Percent > 0 {
			target = int(math.Ceil(float64(len(names)) * float64(s.Percent) / 100))
		}
		target = min(target, len(names))
		if target <= done {
			continue
		}
		waves = append(waves, names[done:target])
		done = target
	}
	if done < len(names) {
		waves = append(waves, names[done:])
	}
	return waves
}

func uniqueSorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	j := 0
	for _, s := range out {
		if s == "" || (j > 0 && s == out[j-1]) {
			continue
		}
		out[j] = s
		j++
	}
	return out[:j]
}
