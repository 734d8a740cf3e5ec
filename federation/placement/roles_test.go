// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// rolesGang builds a gang of roles (name, members, GPUs per member).
func rolesGang(id string, roles ...Role) Gang {
	g := newGang(id, 0, 0).obj()
	g.Roles = roles
	for _, r := range roles {
		g.Members += r.Members
	}
	return g
}

// byRole sums each role's members over the assignments and checks that
// a CPU role has no node and a GPU role always has one.
func byRole(t *testing.T, g Gang, p Placement) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, a := range p.Assignments {
		out[a.Role] += a.Members
		if gpm := g.gpmOf(a.Role); (gpm == 0) != (a.Node == "") {
			t.Errorf("role %s (%d GPUs per member) has node %q", a.Role, gpm, a.Node)
		}
	}
	for _, r := range g.Roles {
		if out[r.Name] != r.Members {
			t.Errorf("role %s has %d members placed, want %d (%+v)", r.Name, out[r.Name], r.Members, p.Assignments)
		}
	}
	return out
}

func TestPlaceRolesLauncherAndWorkers(t *testing.T) {
	s := NewSnapshot([]inventory.Cluster{
		fleetSpec{name: "a", racks: 1, perRack: 2, gpus: 8}.cluster(),
		fleetSpec{name: "b", racks: 2, perRack: 4, gpus: 8}.cluster(),
	}, nil)
	g := rolesGang("mpi", Role{Name: "launcher", Members: 1}, Role{Name: "worker", Members: 4, GPUsPerMember: 8})
	p, err := s.Place(g)
	if err != nil {
		t.Fatal(err)
	}
	byRole(t, g, p)
	last := p.Assignments[len(p.Assignments)-1]
	if last.Role != "launcher" || last.Cluster != "b" || last.Node != "" {
		t.Errorf("launcher assignment = %+v, want last, in cluster b, no node", last)
	}
	if p.Level != inventory.LevelRack || len(p.Clusters) != 1 || p.Clusters[0] != "b" {
		t.Errorf("placed at %s in %v, want one rack of b", p.Level, p.Clusters)
	}
	// The launcher takes no GPU: booking the gang takes exactly 32.
	if _, free := s.GPUs(); free != 80 {
		t.Fatalf("free before = %d", free)
	}
	if err := s.Assume(g, p, t0); err != nil {
		t.Fatal(err)
	}
	if _, free := s.GPUs(); free != 80-32 {
		t.Errorf("free after booking = %d, want 48", free)
	}
	if _, err := s.Release("mpi"); err != nil {
		t.Fatal(err)
	}
	if _, free := s.GPUs(); free != 80 {
		t.Errorf("free after release = %d, want 80", free)
	}
}

func TestPlaceRolesOfDifferentSizes(t *testing.T) {
	c := fleetSpec{name: "a", racks: 2, perRack: 2, gpus: 8}.cluster()
	// Rack r00: one node with 4 free, one with 8; rack r01: 2 and 2 free.
	c.Nodes[0].UsedGPUs, c.Nodes[2].UsedGPUs, c.Nodes[3].UsedGPUs = 4, 6, 6
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	// master 1×8 + workers 2×2: only rack r00 holds both (8 on n01, 4 on n00).
	g := rolesGang("pt", Role{Name: "master", Members: 1, GPUsPerMember: 8}, Role{Name: "worker", Members: 2, GPUsPerMember: 2})
	g.Topology.Required = inventory.LevelRack
	p, err := s.Place(g)
	if err != nil {
		t.Fatal(err)
	}
	byRole(t, g, p)
	for _, a := range p.Assignments {
		want := map[string]string{"master": "r00-n01", "worker": "r00-n00"}[a.Role]
		if a.Node != want {
			t.Errorf("%s on %s, want %s (%+v)", a.Role, a.Node, want, p.Assignments)
		}
	}
	if p.Level != inventory.LevelRack || p.Domain != "a/rack:r00" {
		t.Errorf("level %s %s, want rack r00", p.Level, p.Domain)
	}
	if err := s.Assume(g, p, t0); err != nil {
		t.Fatal(err)
	}
	if s.NodeFree("a", "r00-n01") != 0 || s.NodeFree("a", "r00-n00") != 0 {
		t.Errorf("booked free = %d, %d, want 0, 0", s.NodeFree("a", "r00-n01"), s.NodeFree("a", "r00-n00"))
	}
	// The tentative bookings of the search are all undone: rack r01 is intact.
	if s.NodeFree("a", "r01-n00") != 2 || s.NodeFree("a", "r01-n01") != 2 {
		t.Errorf("rack r01 free = %d, %d, want 2, 2", s.NodeFree("a", "r01-n00"), s.NodeFree("a", "r01-n01"))
	}
}

func TestPlaceRolesAllOrNothing(t *testing.T) {
	c := fleetSpec{name: "a", racks: 1, perRack: 3, gpus: 8}.cluster()
	c.Nodes[0].UsedGPUs, c.Nodes[1].UsedGPUs = 2, 2 // free: 6, 6, 8
	s := NewSnapshot([]inventory.Cluster{c}, nil)
	// 20 GPUs are free and 20 are asked for, the worker alone fits, but the
	// two masters need two nodes with 7 free.
	g := rolesGang("pt", Role{Name: "master", Members: 2, GPUsPerMember: 7}, Role{Name: "worker", Members: 1, GPUsPerMember: 6},
		Role{Name: "launcher", Members: 1})
	_, err := s.Place(g)
	var u *Unschedulable
	if !errors.As(err, &u) || u.Reason != ReasonTopology {
		t.Fatalf("err = %v, want %s", err, ReasonTopology)
	}
	if want := "needs master 2×7 + worker 1×6 + launcher 1×0 GPUs in one cluster; no such domain holds every role"; u.Message != want {
		t.Errorf("message = %q, want %q", u.Message, want)
	}
	if _, free := s.GPUs(); free != 20 {
		t.Errorf("a failed placement left %d of 20 GPUs free", free)
	}
	// Through a scheduling cycle: nothing placed, nothing booked.
	d := Schedule(s, Input{Now: t0, Pending: []Gang{g}})
	if len(d.Placements) != 0 || len(d.Waiting) != 1 {
		t.Fatalf("decision %+v, want the gang waiting", d)
	}
	if _, free := s.GPUs(); free != 20 {
		t.Errorf("a cycle that placed nothing left %d of 20 GPUs free", free)
	}
	// Too many GPUs in all.
	big := rolesGang("big", Role{Name: "m", Members: 3, GPUsPerMember: 8}, Role{Name: "w", Members: 1, GPUsPerMember: 4})
	if _, err := s.Place(big); !errors.As(err, &u) || u.Reason != ReasonInsufficientGPUs {
		t.Errorf("err = %v, want %s", err, ReasonInsufficientGPUs)
	}
	bad := rolesGang("bad", Role{Name: "launcher", Members: 1})
	if _, err := s.Place(bad); !errors.Is(err, ErrInvalidGang) {
		t.Errorf("a gang without GPU roles: err = %v, want ErrInvalidGang", err)
	}
}

func TestScheduleRolesChargesQuota(t *testing.T) {
	s := NewSnapshot([]inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 4, gpus: 8, product: h100}.cluster()}, nil)
	qs := []Queue{{Name: "team", Quotas: quotas("h100", Quota{Nominal: 20, BorrowingLimit: lim(0)})}}
	// 1×8 + 3×4 = 20 GPUs fits the quota exactly; a second copy does not.
	a := rolesGang("a", Role{Name: "launcher", Members: 1}, Role{Name: "master", Members: 1, GPUsPerMember: 8},
		Role{Name: "worker", Members: 3, GPUsPerMember: 4})
	a.Queue = "team"
	b := a
	b.ID, b.Submitted = "b", t0.Add(1)
	if a.GPUs() != 20 {
		t.Fatalf("GPUs() = %d, want 20", a.GPUs())
	}
	d := Schedule(s, Input{Now: t0, Pending: []Gang{a, b}, Queues: qs})
	if got := placedIDs(d); len(got) != 1 || !got["a"] {
		t.Fatalf("placed %v, want a", got)
	}
	if len(d.Waiting) != 1 || d.Waiting[0].Why.Reason != ReasonQuota {
		t.Errorf("waiting %+v, want b for quota", d.Waiting)
	}
	if _, free := s.GPUs(); free != 32-20 {
		t.Errorf("free = %d, want 12", free)
	}
	// The uniform path: launcher + 3 workers of 8 place as one homogeneous gang.
	u := rolesGang("u", Role{Name: "launcher", Members: 1}, Role{Name: "worker", Members: 3, GPUsPerMember: 8})
	s2 := NewSnapshot([]inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 4, gpus: 8}.cluster()}, nil)
	p, err := s2.Place(u)
	if err != nil {
		t.Fatal(err)
	}
	if n := byRole(t, u, p); n["worker"] != 3 || len(p.Assignments) != 4 {
		t.Errorf("assignments %+v, want 3 worker nodes and the launcher", p.Assignments)
	}
}

func TestScheduleRolesPreemptsForDifferentSizes(t *testing.T) {
	s := NewSnapshot([]inventory.Cluster{fleetSpec{name: "a", racks: 1, perRack: 2, gpus: 8}.cluster()}, nil)
	low := newGang("low", 2, 4).priority(PriorityDevelopment, true).obj()
	p, err := s.Place(low)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Assume(low, p, t0); err != nil {
		t.Fatal(err)
	}
	// master 1×8 + worker 1×4 needs 12 of the 8 free: low must go.
	hi := rolesGang("hi", Role{Name: "master", Members: 1, GPUsPerMember: 8}, Role{Name: "worker", Members: 1, GPUsPerMember: 4})
	hi.Priority, hi.Submitted = PriorityProduction, t0
	d := Schedule(s, Input{Now: t0.Add(time.Hour), Pending: []Gang{hi}})
	if len(d.Preemptions) != 1 || d.Preemptions[0].Victim != "low" || d.Preemptions[0].Preemptor != "hi" {
		t.Fatalf("preemptions %+v, want low for hi", d.Preemptions)
	}
	if !strings.Contains(d.Preemptions[0].Reason, "hi (master 1×8 + worker 1×4 GPUs)") {
		t.Errorf("reason %q does not name the roles", d.Preemptions[0].Reason)
	}
	if _, err := s.Release("low"); err != nil {
		t.Fatal(err)
	}
	d = Schedule(s, Input{Now: t0.Add(time.Hour), Pending: []Gang{hi}})
	if got := placedIDs(d); !got["hi"] {
		t.Fatalf("hi not placed once low left: %+v", d)
	}
	byRole(t, hi, d.Placements[0])
}

func TestScheduleRolesUseTheirReservation(t *testing.T) {
	s := NewSnapshot([]inventory.Cluster{fleetSpec{name: "c", racks: 1, perRack: 2, gpus: 8}.cluster()}, nil)
	g := rolesGang("hi", Role{Name: "master", Members: 1, GPUsPerMember: 8}, Role{Name: "worker", Members: 2, GPUsPerMember: 4})
	g.Submitted = t0
	// Last cycle held both nodes for the gang; it places into them now.
	held := []Reservation{{Gang: "hi", Level: inventory.LevelRack, Domain: "c/rack:r00", Nodes: []string{"c/r00-n00", "c/r00-n01"}}}
	d := Schedule(s, Input{Now: t0, Pending: []Gang{g}, Reservations: held})
	if !placedIDs(d)["hi"] {
		t.Fatalf("the gang did not place into its own reservation: %+v", d)
	}
	byRole(t, g, d.Placements[0])
}

func TestPlaceRolesAcrossClusters(t *testing.T) {
	s := NewSnapshot([]inventory.Cluster{
		fleetSpec{name: "a", racks: 1, perRack: 2, gpus: 8}.cluster(),
		fleetSpec{name: "b", racks: 1, perRack: 2, gpus: 8}.cluster(),
	}, nil)
	// 2×8 + 4×4 = 32 GPUs: all of both clusters, so two clusters are needed.
	g := rolesGang("x", Role{Name: "launcher", Members: 1}, Role{Name: "master", Members: 2, GPUsPerMember: 8},
		Role{Name: "worker", Members: 4, GPUsPerMember: 4})
	if _, err := s.Place(g); err == nil {
		t.Fatal("placed in one cluster what needs two")
	}
	g.MaxClusters = 2
	p, err := s.Place(g)
	if err != nil {
		t.Fatal(err)
	}
	byRole(t, g, p)
	if len(p.Clusters) != 2 || p.Level != "" {
		t.Errorf("clusters %v level %q, want both and no single domain", p.Clusters, p.Level)
	}
	if err := s.Assume(g, p, t0); err != nil {
		t.Fatal(err)
	}
	if _, free := s.GPUs(); free != 0 {
		t.Errorf("free after booking = %d, want 0", free)
	}
}
