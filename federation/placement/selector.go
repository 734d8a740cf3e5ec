// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// clusterSelector is the gang's cluster selector as a labels.Selector, with
// Kubernetes semantics for matchLabels and every matchExpressions operator
// (In, NotIn, Exists, DoesNotExist). A nil selector selects every cluster,
// as the Job API documents; an invalid one is an ErrInvalidGang.
func clusterSelector(g *Gang) (labels.Selector, error) {
	if g.ClusterSelector == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(g.ClusterSelector)
	if err != nil {
		return nil, fmt.Errorf("%w: clusterSelector: %w", ErrInvalidGang, err)
	}
	return sel, nil
}
