// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestMicroTimeReadsEveryReleasesForm: a job's submitTime is written to the
// microsecond and read back as written; the whole seconds earlier releases
// wrote read as the same instant; and an earlier release's metav1.Time
// reads the new form (it writes it back with whole seconds).
func TestMicroTimeReadsEveryReleasesForm(t *testing.T) {
	at := time.Date(2026, 12, 6, 7, 55, 16, 123456789, time.UTC)
	submitted := v1alpha1.NewMicroTime(at)
	j := v1alpha1.JobStatus{SubmitTime: &submitted}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"submitTime":"2026-12-06T07:55:16.123456Z"}`; string(b) != want {
		t.Fatalf("marshalled %s, want %s", b, want)
	}
	var back v1alpha1.JobStatus
	if err := json.Unmarshal(b, &back); err != nil || !back.SubmitTime.Time.Time.Equal(at.Truncate(time.Microsecond)) {
		t.Fatalf("read back %v (%v), want %v", back.SubmitTime, err, at.Truncate(time.Microsecond))
	}
	var old v1alpha1.JobStatus
	if err := json.Unmarshal([]byte(`{"submitTime":"2026-12-01T17:55:16Z"}`), &old); err != nil ||
		!old.SubmitTime.Time.Time.Equal(time.Date(2026, 12, 1, 17, 55, 16, 0, time.UTC)) {
		t.Fatalf("whole seconds read as %v (%v)", old.SubmitTime, err)
	}
	var previous struct {
		SubmitTime *metav1.Time `json:"submitTime"`
	}
	if err := json.Unmarshal(b, &previous); err != nil || !previous.SubmitTime.Equal(&metav1.Time{Time: at.Truncate(time.Microsecond)}) {
		t.Fatalf("the previous release's type read %v (%v)", previous.SubmitTime, err)
	}
	var null struct {
		SubmitTime v1alpha1.MicroTime `json:"submitTime"`
	}
	if err := json.Unmarshal([]byte(`{"submitTime":null}`), &null); err != nil || !null.SubmitTime.IsZero() {
		t.Fatalf("null read as %v (%v)", null.SubmitTime, err)
	}
	if b, _ := json.Marshal(null); string(b) != `{"submitTime":null}` {
		t.Fatalf("the zero time marshalled as %s", b)
	}
	if cp := j.DeepCopy(); cp.SubmitTime == j.SubmitTime || !cp.SubmitTime.Equal(&j.SubmitTime.Time) {
		t.Fatal("DeepCopy shares or changes the submit time")
	}
}
