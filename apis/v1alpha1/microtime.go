// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MicroTime is an instant that JSON carries to the microsecond: RFC 3339
// with six digits of fraction, as metav1.MicroTime writes it. It reads RFC
// 3339 with or without a fraction, as metav1.Time does, so it reads the
// whole seconds that earlier releases wrote, and their metav1.Time reads
// what it writes. (metav1.MicroTime reads only times with the six digits:
// a client of this release could not read a job that a hub of the
// previous release served.) It embeds metav1.Time, so that
// equality.Semantic compares it as it compares a metav1.Time.
type MicroTime struct {
	metav1.Time
}

// NewMicroTime returns t as a MicroTime.
func NewMicroTime(t time.Time) MicroTime { return MicroTime{metav1.NewTime(t)} }

// DeepCopyInto copies t into out (a time holds no references that a copy
// must not share).
func (t *MicroTime) DeepCopyInto(out *MicroTime) { *out = *t }

// DeepCopy returns a copy of t.
func (t *MicroTime) DeepCopy() *MicroTime {
	if t == nil {
		return nil
	}
	out := *t
	return &out
}

// MarshalJSON writes t in UTC to the microsecond; the zero time is null.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(metav1.RFC3339Micro))
}

// UnmarshalJSON reads RFC 3339 with or without a fraction of a second;
// null is the zero time.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = metav1.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	pt, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return err
	}
	t.Time = metav1.NewTime(pt.Local())
	return nil
}
