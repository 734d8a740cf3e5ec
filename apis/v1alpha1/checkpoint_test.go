// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParseCheckpointLine(t *testing.T) {
	tests := []struct {
		line    string
		ok      bool
		wantErr string
		step    int64
		uri     string
	}{
		{line: "epoch 3 loss 1.2", ok: false},
		{line: `SHOAL_CHECKPOINT {"step":1200,"uri":"s3://ckpt/step-1200"}` + "\r\n", ok: true, step: 1200, uri: "s3://ckpt/step-1200"},
		{line: `SHOAL_CHECKPOINT {"step":5,"uri":"file:///c/5","time":"2026-12-02T10:00:00Z"}`, ok: true, step: 5, uri: "file:///c/5"},
		{line: `SHOAL_CHECKPOINT {"step":"five"}`, ok: true, wantErr: "checkpoint line"},
		{line: `SHOAL_CHECKPOINT {"step":1,"uri":"s3://x","extra":1}`, ok: true, wantErr: "unknown field"},
		{line: ` SHOAL_CHECKPOINT {"step":1,"uri":"s3://x"}`, ok: false},
	}
	for _, tc := range tests {
		r, ok, err := ParseCheckpointLine(tc.line)
		if ok != tc.ok || (err != nil) != (tc.wantErr != "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: ok %v err %v", tc.line, ok, err)
			continue
		}
		if err == nil && ok && (r.Step != tc.step || r.URI != tc.uri) {
			t.Errorf("%q: %+v", tc.line, r)
		}
	}
}

func TestCheckpointReportValidate(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	if err := (CheckpointReport{Step: 0, URI: "pvc://ckpt/run-1/step-0", Time: now.Add(4 * time.Minute)}).Validate("j", now); err != nil {
		t.Fatalf("valid report: %v", err)
	}
	for _, tc := range []struct {
		r    CheckpointReport
		want string
	}{
		{CheckpointReport{Step: -3, URI: "s3://b/k"}, "step: Invalid value"},
		{CheckpointReport{Step: 1}, "uri: Required value"},
		{CheckpointReport{Step: 1, URI: "relative/path"}, "absolute URI"},
		{CheckpointReport{Step: 1, URI: "s3://b/" + strings.Repeat("k", MaxCheckpointURILength)}, "uri: Too long"},
		{CheckpointReport{Step: 1, URI: "s3://b/k", Time: now.Add(time.Hour)}, "after the hub's clock"},
	} {
		err := tc.r.Validate("j", now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
}

func TestResumeVolumeAndPathAreReserved(t *testing.T) {
	s := &corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "data"}, {Name: ResumeVolumeName}},
		Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: "/var/run"},                // above it: fine
			{Name: "data", MountPath: "/var/run/shoal/resume/"},  // the path itself
			{Name: "data", MountPath: "/var/run/shoal/resume/x"}, // inside it
			{Name: "data", MountPath: "/var/run/shoal/resumed"},  // a sibling: fine
		}}},
	}
	errs := validateResumeReserved(s, field.NewPath("spec"))
	want := []string{"spec.volumes[1].name", "spec.containers[0].volumeMounts[1].mountPath", "spec.containers[0].volumeMounts[2].mountPath"}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %v", errs, want)
	}
	for i, w := range want {
		if errs[i].Field != w {
			t.Errorf("error %d on %s, want %s", i, errs[i].Field, w)
		}
	}
}
