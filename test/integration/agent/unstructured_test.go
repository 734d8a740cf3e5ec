// SPDX-License-Identifier: Apache-2.0

package agent

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

func unstructuredFrom(m map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: m}
}
