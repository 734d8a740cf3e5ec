// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// ErrNoLeader means nobody holds the election.
var ErrNoLeader = errors.New("store: no leader elected")

// Leadership is held by the winner of Campaign until Done closes.
type Leadership interface {
	// Done closes when leadership is lost: the session's lease expired or
	// could not be kept alive, Resign was called, or the Campaign ctx ended.
	// A leader must stop acting as one at once.
	Done() <-chan struct{}
	// Resign gives leadership up so that another campaigner wins at once.
	Resign(ctx context.Context) error
	// Identity is the value the leader campaigned with.
	Identity() string
	// Revision is the store revision at which the campaign key was
	// written; it grows with every new leader, so leaders can use it as an
	// epoch.
	Revision() int64
	// Held is a Txn guard that holds only while this leadership is
	// current: add it to every write a leader makes, so that a deposed
	// leader that has not noticed yet cannot write.
	Held() Cond
}

// Campaign blocks until identity leads the election (or ctx ends). The
// leadership is tied to an etcd session with Config.ElectionTTL: when this
// process dies, another campaigner wins after at most that long.
func (s *Store) Campaign(ctx context.Context, election, identity string) (l Leadership, err error) {
	return s.CampaignAll(ctx, identity, election)
}

// CampaignAll blocks until identity leads every one of elections, won in
// order on one etcd session (or ctx ends). The first election is the
// primary: the leadership's Revision and Held guard are its key's. Held
// fences the others too: all the keys share the session's lease, so the
// primary key exists only while the lease does, and Resign deletes the
// primary key first. Campaigning for the later elections while holding the
// primary lets a replica wait out older replicas that lead only those
// (see docs/high-availability.md, rolling upgrades).
func (s *Store) CampaignAll(ctx context.Context, identity string, elections ...string) (l Leadership, err error) {
	defer observe("campaign", time.Now(), &err)
	if len(elections) == 0 {
		return nil, errors.New("store: campaign in no election")
	}
	ttl := int(math.Ceil(s.electionTTL.Seconds()))
	sess, err := concurrency.NewSession(s.client, concurrency.WithTTL(ttl), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("store: election %s session: %w", elections[0], mapErr(err))
	}
	if err := s.sessions.add(sess.Lease()); err != nil {
		_ = sess.Close()
		return nil, err
	}
	// A campaign waiting for a later election ends with the session: a
	// lost lease deleted the keys already won.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-cctx.Done():
		}
	}()
	won := make([]*concurrency.Election, 0, len(elections))
	for _, name := range elections {
		e := concurrency.NewElection(sess, s.electionPrefix(name))
		if err := e.Campaign(cctx, identity); err != nil {
			_ = sess.Close() // revokes the lease: every key won so far goes
			_ = s.sessions.remove(sess.Lease())
			return nil, fmt.Errorf("store: campaign in election %s: %w", name, mapErr(err))
		}
		won = append(won, e)
	}
	return &leadership{sess: sess, elections: won, identity: identity, sessions: s.sessions}, nil
}

// Leader returns the identity of the current leader of election, or ErrNoLeader.
func (s *Store) Leader(ctx context.Context, election string) (string, error) {
	resp, err := s.client.Get(ctx, s.electionPrefix(election)+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%w: %s", ErrNoLeader, election)
	}
	return string(resp.Kvs[0].Value), nil
}

func (s *Store) electionPrefix(election string) string {
	return s.prefix + electionsKind + "/" + election // concurrency adds "/<lease id>"
}

type leadership struct {
	sess *concurrency.Session
	// elections are those won, the primary first.
	elections []*concurrency.Election
	identity  string
	sessions  *sessionFile
}

func (l *leadership) Done() <-chan struct{} { return l.sess.Done() }
func (l *leadership) Identity() string      { return l.identity }
func (l *leadership) Revision() int64       { return l.elections[0].Rev() }

func (l *leadership) Held() Cond {
	p := l.elections[0]
	return Cond{cmp: clientv3.Compare(clientv3.CreateRevision(p.Key()), "=", p.Rev())}
}

// Resign deletes the primary key first, so that Held fails before a
// standby can win any of the elections, then the others, then the session.
func (l *leadership) Resign(ctx context.Context) error {
	var errs []error
	for _, e := range l.elections {
		errs = append(errs, mapErr(e.Resign(ctx)))
	}
	err := errors.Join(append(errs, mapErr(l.sess.Close()))...)
	_ = l.sessions.remove(l.sess.Lease())
	return err
}
