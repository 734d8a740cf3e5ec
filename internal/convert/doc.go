// SPDX-License-Identifier: Apache-2.0

// Package convert turns a Kubeflow PyTorchJob (kubeflow.org/v1) or a
// JobSet (jobset.x-k8s.io/v1alpha2) manifest into a Shoal Job with roles,
// and names every field of the source it could not carry. It reads the
// manifests as plain maps: it depends on neither project's Go module.
//
// Every field the conversion reads is taken out of the source map; what is
// left at the end is what the Shoal Job cannot express, reported by its
// path. Pod templates are carried whole.
package convert
