// SPDX-License-Identifier: Apache-2.0

package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shoal-dev/shoal/hub/store"
)

// Store kinds written by this package.
const (
	// Kind holds one Reservation per job name.
	Kind = "reservations"
	// KindClusterVersions holds one booking counter per cluster.
	KindClusterVersions = "ledgerclusters"
)

// Member is one gang member's booked place.
type Member struct {
	// Index is the member's index in the gang, from 0.
	Index int32 `json:"index"`
	// Role is the member's role (empty for a job without roles).
	Role string `json:"role,omitempty"`
	// Cluster and Node name the physical node the member targets; Node is
	// empty for a member of a CPU-only role (the workload cluster's
	// scheduler picks its node).
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// VirtualNode is the hub-cluster virtual node of the node's GPU pool
	// (shoal-<cluster>-<pool>), where the member's hub pod is bound.
	VirtualNode string `json:"virtualNode"`
	// Domain is the topology domain of the gang ("<cluster>/<level>:<name>").
	Domain string `json:"domain,omitempty"`
}

// Reservation is a gang's hold on GPUs, from placement until its members
// are gone.
type Reservation struct {
	// Job is the job's name.
	Job string `json:"job"`
	// Epoch is the placement epoch; agents refuse members of older epochs.
	Epoch int64 `json:"epoch"`
	// Gang is the gang as the scheduler placed it (for later snapshots;
	// PlacementGang converts it for the engine).
	Gang Gang `json:"gang"`
	// Assignments are the gang's nodes and member counts
	// (PlacementAssignments converts them for the engine).
	Assignments []Assignment `json:"assignments"`
	// Members are the members in index order.
	Members []Member `json:"members"`
	// Level and Domain are the tightest domain holding the gang.
	Level  string `json:"level,omitempty"`
	Domain string `json:"domain,omitempty"`
	// Clusters are the clusters the gang uses.
	Clusters []string `json:"clusters"`
	// Booked is when the scheduler booked it.
	Booked time.Time `json:"booked"`
	// Started is when every member first ran (zero before).
	Started time.Time `json:"started,omitzero"`
}

// ClusterVersion counts the bookings made on a cluster.
type ClusterVersion struct {
	// Bookings is bumped by every Book touching the cluster.
	Bookings int64 `json:"bookings"`
}

// Ledger reads and writes reservations.
type Ledger struct {
	st       *store.Store
	res      *store.Collection[*Reservation]
	versions *store.Collection[*ClusterVersion]
}

// New returns the ledger on st.
func New(st *store.Store) *Ledger {
	return &Ledger{
		st:       st,
		res:      store.NewCollection(st, Kind, store.JSONCodec[*Reservation]()),
		versions: store.NewCollection(st, KindClusterVersions, store.JSONCodec[*ClusterVersion]()),
	}
}

// Reservations returns the read-only view of the reservations for other
// packages; changes go through the Ledger's methods.
func (l *Ledger) Reservations() store.Reader[*Reservation] { return l.res.Reader() }

// State is the ledger at one store revision.
type State struct {
	// Revision is the store revision it was read at.
	Revision int64
	// Reservations by job name, with their revisions.
	Reservations map[string]store.Item[*Reservation]
	versions     map[string]store.Item[*ClusterVersion]
}

// Read returns the ledger at one revision.
func (l *Ledger) Read(ctx context.Context) (*State, error) {
	st := &State{Reservations: map[string]store.Item[*Reservation]{}, versions: map[string]store.Item[*ClusterVersion]{}}
	vs, err := listAll(ctx, l.versions, 0)
	if err != nil {
		return nil, err
	}
	st.Revision = vs.rev
	for _, it := range vs.items {
		st.versions[it.Name] = it
	}
	rs, err := listAll(ctx, l.res, st.Revision)
	if err != nil {
		return nil, err
	}
	for _, it := range rs.items {
		st.Reservations[it.Name] = it
	}
	return st, nil
}

type listed[T any] struct {
	items []store.Item[T]
	rev   int64
}

func listAll[T any](ctx context.Context, c *store.Collection[T], rev int64) (listed[T], error) {
	var out listed[T]
	opts := store.ListOptions{Limit: 1000, Revision: rev}
	for {
		res, err := c.List(ctx, opts)
		if err != nil {
			return out, err
		}
		out.items = append(out.items, res.Items...)
		out.rev = res.Revision
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}

// Book returns the guards and writes that book r on top of the state: the
// reservation must be absent and every cluster counter unchanged since the
// read. The caller adds its own guards (job revision, leadership) and
// commits them in one store transaction.
func (l *Ledger) Book(st *State, r *Reservation) ([]store.Cond, []store.Op) {
	return l.BookAll(st, []*Reservation{r})
}

// BookAll is Book for several reservations in one transaction: each must
// be absent, and every cluster counter they touch unchanged since the
// read; each counter advances once per reservation on it. State.Booked of
// each, with the transaction's revision, keeps the state equal to what
// was written.
func (l *Ledger) BookAll(st *State, rs []*Reservation) ([]store.Cond, []store.Op) {
	var conds []store.Cond
	var ops []store.Op
	var order []string
	per := map[string]int64{}
	for _, r := range rs {
		conds = append(conds, l.res.Absent(r.Job))
		ops = append(ops, l.res.PutOp(r.Job, r))
		for _, c := range r.Clusters {
			if _, ok := per[c]; !ok {
				order = append(order, c)
			}
			per[c]++
		}
	}
	for _, c := range order {
		cur, ok := st.versions[c]
		next := &ClusterVersion{Bookings: per[c]}
		if ok {
			next.Bookings += cur.Object.Bookings
		}
		conds = append(conds, l.versions.RevIs(c, cur.Revision))
		ops = append(ops, l.versions.PutOp(c, next))
	}
	return conds, ops
}

// Get returns a job's reservation and its revision.
func (l *Ledger) Get(ctx context.Context, job string) (*Reservation, int64, error) {
	return l.res.Get(ctx, job)
}

// ErrStaleEpoch is returned when a reservation is held under another epoch.
var ErrStaleEpoch = errors.New("ledger: stale epoch")

// Release deletes a job's reservation when it is still of epoch. Releasing
// an absent reservation is not an error.
func (l *Ledger) Release(ctx context.Context, job string, epoch int64) error {
	ops, conds, err := l.ReleaseOps(ctx, job, epoch)
	if err != nil || ops == nil {
		return err
	}
	_, err = l.st.Txn(ctx).If(conds...).Then(ops...).Commit()
	return err
}

// ReleaseOps returns the guarded delete of a job's reservation of epoch, for
// a caller's transaction; nil ops when there is nothing to release.
func (l *Ledger) ReleaseOps(ctx context.Context, job string, epoch int64) ([]store.Op, []store.Cond, error) {
	r, rev, err := l.res.Get(ctx, job)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if r.Epoch != epoch {
		return nil, nil, fmt.Errorf("%w: job %q is booked under epoch %d, not %d", ErrStaleEpoch, job, r.Epoch, epoch)
	}
	return []store.Op{l.res.DeleteOp(job)}, []store.Cond{l.res.RevIs(job, rev)}, nil
}

// MarkStarted records when every member of a job of epoch first ran. With
// guards (a leader's store.Leadership.Held) the write is made only while
// they hold, store.ErrConflict otherwise.
func (l *Ledger) MarkStarted(ctx context.Context, job string, epoch int64, at time.Time, guards ...store.Cond) error {
	if len(guards) > 0 {
		r, rev, err := l.res.Get(ctx, job)
		switch {
		case err != nil:
			return err
		case r.Epoch != epoch:
			return ErrStaleEpoch
		case !r.Started.IsZero():
			return nil
		}
		r.Started = at
		_, err = l.st.Txn(ctx).If(append([]store.Cond{l.res.RevIs(job, rev)}, guards...)...).Then(l.res.PutOp(job, r)).Commit()
		return err
	}
	_, _, err := l.res.GuaranteedUpdate(ctx, job, func(r *Reservation) (*Reservation, error) {
		if r.Epoch != epoch {
			return r, ErrStaleEpoch
		}
		if !r.Started.IsZero() {
			return r, errUnchanged
		}
		r.Started = at
		return r, nil
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

var errUnchanged = errors.New("unchanged")

// Booked records in the state a booking committed at rev, so the same
// state can book further gangs of one decision.
func (st *State) Booked(r *Reservation, rev int64) {
	st.Reservations[r.Job] = store.Item[*Reservation]{Name: r.Job, Object: r, Revision: rev}
	for _, c := range r.Clusters {
		cur := st.versions[c]
		n := int64(1)
		if cur.Object != nil {
			n = cur.Object.Bookings + 1
		}
		st.versions[c] = store.Item[*ClusterVersion]{Name: c, Object: &ClusterVersion{Bookings: n}, Revision: rev}
	}
}

// ReleaseGuarded returns the delete of a job's reservation guarded by the
// revision it was read at, for a caller's transaction.
func (l *Ledger) ReleaseGuarded(job string, rev int64) (store.Cond, store.Op) {
	return l.res.RevIs(job, rev), l.res.DeleteOp(job)
}

// ClusterVersions returns the read-only view of the booking counters, for a
// scheduler that keeps the ledger in memory from a watch (NewState).
func (l *Ledger) ClusterVersions() store.Reader[*ClusterVersion] { return l.versions.Reader() }

// NewState returns the ledger as a caller kept it from its own list and
// watch of the reservations and the booking counters. Book guards on the
// counters' revisions, so its decisions are as safe as Read's when every
// booking a counter revision of versions shows is in reservations (the
// reservations are at least as new as the counters: a booking writes both
// at one revision); rev is the revision the reservations are at. The maps
// become the state's: Booked adds to them.
func NewState(rev int64, reservations map[string]store.Item[*Reservation], versions map[string]store.Item[*ClusterVersion]) *State {
	return &State{Revision: rev, Reservations: reservations, versions: versions}
}

// NewBookingState is NewState for a caller that reads the reservations
// (at revision rev) from its own cache without copying them into the
// state: Reservations starts empty and holds only what is booked on the
// state (Booked). Book guards on the counters alone, as for NewState.
func NewBookingState(rev int64, versions map[string]store.Item[*ClusterVersion]) *State {
	return NewState(rev, map[string]store.Item[*Reservation]{}, versions)
}
