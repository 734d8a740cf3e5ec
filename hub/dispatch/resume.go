// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// resumeFieldPath is the downward-API path of the member pod's resume
// annotation.
var resumeFieldPath = fmt.Sprintf("metadata.annotations['%s']", v1alpha1.AnnotationResumeCheckpoint)

// resume gives every container of a member of a job that reported a
// checkpoint the resume contract (docs/checkpoints.md): SHOAL_RESUME_URI,
// SHOAL_RESUME_STEP and, read-only, the file
// /var/run/shoal/resume/checkpoint.json holding the checkpoint in JSON
// (a downward-API volume of the pod's resume annotation, which the agent
// copies to the local pod with the others). A template's own resume
// annotation is dropped; its volume name and mount path are refused at
// submit.
func resume(p *corev1.Pod, j *v1alpha1.Job) {
	delete(p.Annotations, v1alpha1.AnnotationResumeCheckpoint)
	c := j.Status.Checkpoint
	if c == nil {
		return
	}
	b, err := json.Marshal(c)
	if err != nil { // strings, numbers and times always marshal
		return
	}
	p.Annotations[v1alpha1.AnnotationResumeCheckpoint] = string(b)
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v1alpha1.ResumeVolumeName,
		VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
			Path: v1alpha1.ResumeFileName, FieldRef: &corev1.ObjectFieldSelector{FieldPath: resumeFieldPath}}}}}})
	env := []corev1.EnvVar{{Name: v1alpha1.EnvResumeURI, Value: c.URI}, {Name: v1alpha1.EnvResumeStep, Value: strconv.FormatInt(c.Step, 10)}}
	mount := corev1.VolumeMount{Name: v1alpha1.ResumeVolumeName, MountPath: v1alpha1.ResumeMountPath, ReadOnly: true}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		c.Env = append(c.Env, env...)
		c.VolumeMounts = append(c.VolumeMounts, mount)
	}
}
