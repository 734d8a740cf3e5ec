// SPDX-License-Identifier: Apache-2.0

package ledger

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/placement"
)

// TestWithoutMembersIsTheReservationLessItsMembers: the scheduler's
// decoding of a reservation keeps every field but Members, and refuses to
// encode.
func TestWithoutMembersIsTheReservationLessItsMembers(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	full := &Reservation{Job: "llama", Epoch: 3, Gang: GangOf(legacyGang()),
		Assignments: AssignmentsOf([]placement.Assignment{{Cluster: "eu1", Node: "n1", Members: 1}, {Cluster: "eu1", Node: "n2", Members: 1}}),
		Members: []Member{{Index: 0, Cluster: "eu1", Node: "n1", VirtualNode: "shoal-eu1-h100", Domain: "eu1/rack:r1"},
			{Index: 1, Cluster: "eu1", Node: "n2", VirtualNode: "shoal-eu1-h100", Domain: "eu1/rack:r1"}},
		Level: "rack", Domain: "eu1/rack:r1", Clusters: []string{"eu1"}, Booked: at, Started: at.Add(time.Minute)}
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	got, err := withoutMembers{}.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := *full
	want.Members = nil
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("decoded without members:\n%+v\nwant\n%+v", got, &want)
	}
	if _, err := (withoutMembers{}).Marshal(got); err == nil {
		t.Error("Marshal: no error, want a refusal (the view is read-only)")
	}
	if _, err := (withoutMembers{}).Unmarshal([]byte(`{"job":`)); err == nil {
		t.Error("a truncated record decoded without an error")
	}
}
