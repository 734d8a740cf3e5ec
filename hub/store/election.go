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
	defer observe("campaign", time.Now(), &err)
	ttl := int(math.Ceil(s.electionTTL.Seconds()))
	sess, err := concurrency.NewSession(s.client, concurrency.WithTTL(ttl), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("store: election %s session: %w", election, mapErr(err))
	}
	e := concurrency.NewElection(sess, s.electionPrefix(election))
	if err := e.Campaign(ctx, identity); err != nil {
		_ = sess.Close()
		return nil, fmt.Errorf("store: campaign in election %s: %w", election, mapErr(err))
	}
	return &leadership{sess: sess, election: e, identity: identity}, nil
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
	sess     *concurrency.Session
	election *concurrency.Election
	identity string
}

func (l *leadership) Done() <-chan struct{} { return l.sess.Done() }
func (l *leadership) Identity() string      { return l.identity }
func (l *leadership) Revision() int64       { return l.election.Rev() }

func (l *leadership) Held() Cond {
	return Cond{cmp: clientv3.Compare(clientv3.CreateRevision(l.election.Key()), "=", l.election.Rev())}
}

func (l *leadership) Resign(ctx context.Context) error {
	err := l.election.Resign(ctx)
	return errors.Join(mapErr(err), mapErr(l.sess.Close()))
}
