// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// JobCheckpoint is the latest checkpoint a job reported (docs/checkpoints.md):
// where its saved state is, which step it holds and when it was taken. The
// hub keeps the latest per job; a gang placed again resumes from it.
type JobCheckpoint struct {
	// Step is the training step the checkpoint holds.
	Step int64 `json:"step"`
	// URI is where the checkpoint is (s3://…, gs://…, file:///…, pvc://…).
	URI string `json:"uri"`
	// Time is when the job took it (the reporter's clock).
	Time metav1.Time `json:"time"`
	// ReportedAt is when the hub recorded it.
	ReportedAt metav1.Time `json:"reportedAt"`
	// ReportedBy is who reported it: a user, or agent:<cluster> for a
	// report the agent read from a member's log.
	ReportedBy string `json:"reportedBy,omitempty"`
	// Epoch is the placement epoch that was running when it was reported.
	Epoch int64 `json:"epoch,omitempty"`
	// Count is how many checkpoints the job reported in all.
	Count int32 `json:"count"`
	// IntervalSeconds is the time between the job's last two checkpoints:
	// the scheduler expects the next one that long after the last
	// (docs/placement.md, checkpoint-aware preemption).
	IntervalSeconds int64 `json:"intervalSeconds,omitempty"`
}

// CheckpointReport is one checkpoint a job reports: through the hub API
// (Jobs.ReportCheckpoint, `shoal job checkpoint`) or as a line its member 0
// prints (CheckpointLinePrefix).
//
// +kubebuilder:object:generate=false
type CheckpointReport struct {
	// Step is the training step the checkpoint holds (0 or more; a job's
	// steps never go back).
	Step int64 `json:"step"`
	// URI is where the checkpoint is: an absolute URI with a scheme.
	URI string `json:"uri"`
	// Time is when it was taken; zero: when the hub receives it.
	Time time.Time `json:"time,omitzero"`
}

// MaxCheckpointURILength bounds a checkpoint URI.
const MaxCheckpointURILength = 2048

// CheckpointClockSkew is how far in the future a checkpoint's time may be
// (the reporter's clock against the hub's).
const CheckpointClockSkew = 5 * time.Minute

// Validate checks a report received at now for job, with field paths.
func (r CheckpointReport) Validate(job string, now time.Time) error {
	var errs field.ErrorList
	if r.Step < 0 {
		errs = append(errs, field.Invalid(field.NewPath("step"), r.Step, "must be 0 or more"))
	}
	errs = append(errs, validateURI(field.NewPath("uri"), r.URI, "where the checkpoint is, e.g. s3://bucket/run/step-100")...)
	if !r.Time.IsZero() && r.Time.After(now.Add(CheckpointClockSkew)) {
		errs = append(errs, field.Invalid(field.NewPath("time"), r.Time.UTC().Format(time.RFC3339),
			fmt.Sprintf("is more than %s after the hub's clock (%s)", CheckpointClockSkew, now.UTC().Format(time.RFC3339))))
	}
	return NewInvalidError("Checkpoint", job, errs)
}

// validateURI checks where a checkpoint or an artefact is: an absolute URI
// with a scheme, no white space, MaxCheckpointURILength bytes at most;
// required says what to give when it is empty.
func validateURI(p *field.Path, uri, required string) field.ErrorList {
	switch u, err := url.Parse(uri); {
	case uri == "":
		return field.ErrorList{field.Required(p, required)}
	case len(uri) > MaxCheckpointURILength:
		return field.ErrorList{field.TooLong(p, "", MaxCheckpointURILength)}
	case err != nil:
		return field.ErrorList{field.Invalid(p, uri, err.Error())}
	case !u.IsAbs():
		return field.ErrorList{field.Invalid(p, uri, "must be an absolute URI with a scheme (s3://, gs://, file:///, pvc://…)")}
	case strings.ContainsAny(uri, "\n\r\t "):
		return field.ErrorList{field.Invalid(p, uri, "must not contain white space")}
	}
	return nil
}

// CheckpointLinePrefix starts the line a job's member 0 prints on its
// standard output to report a checkpoint, followed by the report in JSON:
//
//	SHOAL_CHECKPOINT {"step":1200,"uri":"s3://ckpt/run-7/step-1200"}
//
// The agent of the member's cluster reads member 0's log and reports every
// such line to the hub (agent/checkpoints).
const CheckpointLinePrefix = "SHOAL_CHECKPOINT "

// ParseCheckpointLine reads a checkpoint line: ok is false for any other
// line; err says why a line with the prefix is not a valid report.
func ParseCheckpointLine(line string) (r CheckpointReport, ok bool, err error) {
	rest, found := strings.CutPrefix(strings.TrimRight(line, "\r\n"), CheckpointLinePrefix)
	if !found {
		return r, false, nil
	}
	d := json.NewDecoder(strings.NewReader(rest))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return r, true, fmt.Errorf("checkpoint line: %w", err)
	}
	return r, true, nil
}

// The resume contract: a gang placed again after its job reported a
// checkpoint gets, in every container of every member, the environment
// below and the file ResumeMountPath/ResumeFileName (the JobCheckpoint as
// JSON, from the member pod's AnnotationResumeCheckpoint).
const (
	// EnvResumeURI is the URI of the checkpoint to resume from.
	EnvResumeURI = "SHOAL_RESUME_URI"
	// EnvResumeStep is its step.
	EnvResumeStep = "SHOAL_RESUME_STEP"
	// AnnotationResumeCheckpoint on a member pod is the JobCheckpoint to
	// resume from, in JSON.
	AnnotationResumeCheckpoint = Prefix + "resume-checkpoint"
	// ResumeVolumeName is the downward-API volume holding it.
	ResumeVolumeName = "shoal-resume"
	// ResumeMountPath is where every container sees that volume.
	ResumeMountPath = "/var/run/shoal/resume"
	// ResumeFileName is the file in it.
	ResumeFileName = "checkpoint.json"
)

// CheckpointAfter reports whether the job's latest checkpoint was taken and
// reported at or after t (the preemption notice).
func (s *JobStatus) CheckpointAfter(t time.Time) bool {
	c := s.Checkpoint
	return c != nil && !c.Time.Time.Before(t) && !c.ReportedAt.Time.Before(t)
}

// validateResumeReserved refuses a template that uses the resume volume's
// name or mounts something at its path: Shoal adds both to members that
// resume from a checkpoint.
func validateResumeReserved(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range s.Volumes {
		if v.Name == ResumeVolumeName {
			errs = append(errs, field.Forbidden(p.Child("volumes").Index(i).Child("name"),
				fmt.Sprintf("%s is the volume Shoal adds to members that resume from a checkpoint (docs/checkpoints.md)", ResumeVolumeName)))
		}
	}
	for i, c := range s.Containers {
		for k, m := range c.VolumeMounts {
			if mp := path.Clean(m.MountPath); mp == ResumeMountPath || strings.HasPrefix(mp, ResumeMountPath+"/") {
				errs = append(errs, field.Forbidden(p.Child("containers").Index(i).Child("volumeMounts").Index(k).Child("mountPath"),
					fmt.Sprintf("%s is where Shoal mounts the checkpoint to resume from (docs/checkpoints.md); mount elsewhere", ResumeMountPath)))
			}
		}
	}
	return errs
}
