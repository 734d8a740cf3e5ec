// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 declares Shoal's user-facing objects (API group
// shoal.dev, version v1alpha1): Job, Queue, Cluster, JoinToken and Rollout,
// with their defaults, validation and strict decoding from YAML or JSON.
//
// The package only declares: it holds types and pure functions over them and
// imports nothing of Shoal. The objects travel over the hub's gRPC API as
// their JSON encoding (apis/proto/shoal/v1alpha1.Object), so what a user
// writes in YAML is exactly what the hub stores.
//
// Validation returns every problem at once, each with its field path, as a
// field.ErrorList; InvalidError wraps such a list as an error.
//
// Every type has a generated DeepCopy (zz_generated.deepcopy.go, written by
// `make generate` with controller-gen object); the objects are also
// runtime.Objects.
//
// +kubebuilder:object:generate=true
// +groupName=shoal.dev
package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

// Group is the API group of Shoal's objects.
const Group = "shoal.dev"

// Version is the API version of this package.
const Version = "v1alpha1"

// APIVersion is the apiVersion field of every object of this package.
const APIVersion = Group + "/" + Version

// GroupVersion is Group and Version as a schema.GroupVersion.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Kinds of the objects of this package.
const (
	KindJob       = "Job"
	KindQueue     = "Queue"
	KindCluster   = "Cluster"
	KindJoinToken = "JoinToken"
	KindRollout   = "Rollout"
	KindUser      = "User"
	// KindModelVersion is a registered model version (docs/models.md).
	KindModelVersion = "ModelVersion"
	// KindInferenceService is a served model (docs/inference.md).
	KindInferenceService = "InferenceService"
	// KindGPUPool is a named set of GPU nodes (docs/pools.md).
	KindGPUPool = "GPUPool"
)

// SubmitResultHeader is the gRPC response header in which Jobs.Submit says
// what it did: "created", "existing" (same name and spec already stored;
// nothing changed) or "dry_run".
const SubmitResultHeader = "shoal-submit-result"
