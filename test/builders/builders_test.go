// SPDX-License-Identifier: Apache-2.0

package builders_test

import (
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// The builders' defaults are valid objects, so a test only states what it
// changes.
func TestDefaultsAreValid(t *testing.T) {
	j := testjob.New("a").Queue("org/team").Members(4).GPUs(8).Required(v1alpha1.TopologyRack).Obj()
	v1alpha1.SetJobDefaults(j)
	if errs := v1alpha1.ValidateJob(j); len(errs) > 0 {
		t.Errorf("job: %v", errs)
	}
	if j.Spec.Gang.Members != 4 || j.Spec.Gang.GPUsPerMember != 8 || j.Spec.Queue != "org/team" {
		t.Errorf("job spec not as built: %+v", j.Spec)
	}
	q := testqueue.New("org/team").Weight(2).Quota("h100", 64).BorrowingLimit("h100", 0).Obj()
	if errs := v1alpha1.ValidateQueue(q); len(errs) > 0 {
		t.Errorf("queue: %v", errs)
	}
	if b := q.Spec.Quotas["h100"].BorrowingLimit; b == nil || *b != 0 || q.Spec.Quotas["h100"].Nominal != 64 {
		t.Errorf("quota not as built: %+v", q.Spec.Quotas)
	}
}
