// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ModelVersion is one immutable version of a model (docs/models.md): the
// artefact a training job produced, where it is, its digest, and where it
// came from — the job and checkpoint, and the version it was derived from —
// so that lineage can be followed from a served model back to its training.
// Its name is "<model>@<version>" (ModelVersionName).
// +kubebuilder:object:root=true
type ModelVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModelVersionSpec   `json:"spec"`
	Status ModelVersionStatus `json:"status,omitempty"`
}

// ModelVersionSpec is what a registration says; it never changes.
type ModelVersionSpec struct {
	// Model is the model's name (a DNS label).
	Model string `json:"model"`
	// Version names this version of it (letters, digits, '.', '_', '-';
	// 63 at most, starting with a letter or digit), e.g. 1.2.0.
	Version string `json:"version"`
	// ArtifactURI is where the artefact is: an absolute URI.
	ArtifactURI string `json:"artifactURI"`
	// Digest is the artefact's digest, sha256:<64 hex digits>.
	Digest string `json:"digest"`
	// Framework is what the artefact is for (pytorch, jax, onnx, …).
	Framework string `json:"framework,omitempty"`
	// Source is the training job and checkpoint it was produced by.
	Source *ModelSource `json:"source,omitempty"`
	// Parent is the version it was derived from, "<model>@<version>"
	// (a fine-tune's base); it must be registered first.
	Parent string `json:"parent,omitempty"`
}

// ModelSource names what produced a version.
type ModelSource struct {
	// Job is the training job's name.
	Job string `json:"job"`
	// CheckpointStep is the step of the job's checkpoint the artefact was
	// made from; unset: the job's latest checkpoint, if it has one.
	CheckpointStep *int64 `json:"checkpointStep,omitempty"`
}

// ModelVersionStatus is what the hub recorded at registration: who
// registered it and a copy of its source job and checkpoint as they were,
// so the lineage outlives the job's deletion.
type ModelVersionStatus struct {
	// RegisteredAt is when the hub stored it.
	RegisteredAt *metav1.Time `json:"registeredAt,omitempty"`
	// RegisteredBy is the user who registered it.
	RegisteredBy string `json:"registeredBy,omitempty"`
	// Job is the source job as it was at registration.
	Job *ModelJobRecord `json:"job,omitempty"`
	// Checkpoint is the source checkpoint as the job reported it.
	Checkpoint *JobCheckpoint `json:"checkpoint,omitempty"`
}

// ModelJobRecord is a source job as a model version remembers it.
type ModelJobRecord struct {
	// Name, UID, Queue and Owner identify the job.
	Name  string `json:"name"`
	UID   string `json:"uid"`
	Queue string `json:"queue"`
	Owner string `json:"owner,omitempty"`
	// Phase was the job's phase at registration.
	Phase JobPhase `json:"phase,omitempty"`
}

// ModelVersionName is the name of version of model: "<model>@<version>".
func ModelVersionName(model, version string) string { return model + "@" + version }

// ParseModelVersionName splits "<model>@<version>".
func ParseModelVersionName(s string) (model, version string, err error) {
	model, version, ok := strings.Cut(s, "@")
	if !ok || model == "" || version == "" {
		return "", "", fmt.Errorf("%q is not MODEL@VERSION", s)
	}
	return model, version, nil
}

var (
	versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	digestRE  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// ValidateModelVersion checks a registration, with field paths. Its name,
// when set, must be ModelVersionName of its spec.
func ValidateModelVersion(m *ModelVersion) error {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	s := &m.Spec
	for _, msg := range validation.IsDNS1123Label(s.Model) {
		errs = append(errs, field.Invalid(sp.Child("model"), s.Model, msg))
	}
	if !versionRE.MatchString(s.Version) {
		errs = append(errs, field.Invalid(sp.Child("version"), s.Version,
			"must be 1–63 letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. 1.2.0)"))
	}
	if want := ModelVersionName(s.Model, s.Version); m.Name != "" && m.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), m.Name, fmt.Sprintf("must be %q (model@version) or empty", want)))
	}
	errs = append(errs, validateURI(sp.Child("artifactURI"), s.ArtifactURI, "where the artefact is, e.g. s3://models/llama/1.0")...)
	if !digestRE.MatchString(s.Digest) {
		errs = append(errs, field.Invalid(sp.Child("digest"), s.Digest, "must be sha256: and 64 lower-case hex digits"))
	}
	if len(s.Framework) > 63 {
		errs = append(errs, field.TooLong(sp.Child("framework"), "", 63))
	}
	if src := s.Source; src != nil {
		for _, msg := range validation.IsDNS1123Label(src.Job) {
			errs = append(errs, field.Invalid(sp.Child("source", "job"), src.Job, msg))
		}
		if c := src.CheckpointStep; c != nil && *c < 0 {
			errs = append(errs, field.Invalid(sp.Child("source", "checkpointStep"), *c, "must be 0 or more"))
		}
	}
	if s.Parent != "" {
		pm, pv, err := ParseModelVersionName(s.Parent)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(sp.Child("parent"), s.Parent, "must be MODEL@VERSION"))
		case len(validation.IsDNS1123Label(pm)) > 0 || !versionRE.MatchString(pv):
			errs = append(errs, field.Invalid(sp.Child("parent"), s.Parent, "names no valid model version"))
		case pm == s.Model && pv == s.Version:
			errs = append(errs, field.Invalid(sp.Child("parent"), s.Parent, "a version cannot be its own parent"))
		}
	}
	return NewInvalidError("ModelVersion", m.Name, errs)
}
