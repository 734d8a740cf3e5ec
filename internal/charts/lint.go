// SPDX-License-Identifier: Apache-2.0

package charts

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// Lint runs helm lint's rules (Chart.yaml, values and their schema, every
// template rendered with values) on the chart in dir, in namespace, and
// returns every message of severity warning or worse, joined.
func Lint(dir, namespace string, values map[string]any) error {
	l := lint.All(dir, values, namespace, false)
	var errs []error
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, fmt.Errorf("%s", m.Error()))
		}
	}
	return errors.Join(errs...)
}
