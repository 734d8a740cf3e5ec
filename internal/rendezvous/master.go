// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"context"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// writeTimeout bounds one Reply write; completeGrace is how long the master
// waits, once it sent the world, for every member to close its connection;
// failLinger is how long a failed master keeps answering members that
// connect with its error, so that they fail with it instead of retrying.
const (
	writeTimeout  = 10 * time.Second
	completeGrace = 10 * time.Second
	failLinger    = 2 * time.Second
)

// Serve runs the master on ln: it collects one Hello per member until every
// rank of cfg.WorldSize is held, then sends the world to every member and
// returns nil once they have all read it. A Hello that disagrees with the
// master's world (a WORLD_SIZE MismatchError, a RankError) or the timeout
// (TimeoutError) ends the rendezvous: the error is sent to every member that
// joined, and for a short while to every member that connects, and
// returned. A member of another job or epoch (SHOAL_JOB, SHOAL_EPOCH) is a
// stranger: it gets its MismatchError and the master goes on without it.
// A member whose connection closes before the world is complete is
// forgotten, so it may join again. Serve closes ln.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	context.AfterFunc(ctx, func() { _ = ln.Close() })
	m := &master{cfg: cfg, events: make(chan event), holders: map[int]*peer{}, joined: map[*peer]bool{},
		log: klog.FromContext(ctx)}
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.accept(ctx, ln, &wg)
	}()
	return m.loop(ctx)
}

// master is the state of Serve, owned by its loop.
type master struct {
	cfg     Config
	events  chan event
	holders map[int]*peer // rank -> member holding it
	joined  map[*peer]bool
	log     klog.Logger
}

// peer is one member connection.
type peer struct {
	conn  net.Conn
	hello Hello
}

// event is a peer's Hello (hello set) or the end of its connection.
type event struct {
	p     *peer
	hello *Hello
	err   error
}

func (m *master) accept(ctx context.Context, ln net.Listener, wg *sync.WaitGroup) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		context.AfterFunc(ctx, func() { _ = conn.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.read(ctx, &peer{conn: conn})
		}()
	}
}

// read sends the peer's Hello, then the end of its connection, to the loop.
func (m *master) read(ctx context.Context, p *peer) {
	send := func(ev event) bool {
		select {
		case m.events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	lr := newLineReader(p.conn)
	var h Hello
	if err := lr.next(&h); err != nil {
		m.log.V(1).Info("Connection closed before a hello", "remote", p.conn.RemoteAddr(), "err", err)
		_ = p.conn.Close()
		return
	}
	if !send(event{p: p, hello: &h}) {
		return
	}
	var ignored Reply
	err := lr.next(&ignored)
	for err == nil {
		err = lr.next(&ignored)
	}
	send(event{p: p, err: err})
}

func (m *master) loop(ctx context.Context) error {
	timer := time.NewTimer(m.cfg.Timeout)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return m.fail(ctx, m.timeoutError())
		case ev := <-m.events:
			if ev.hello == nil {
				m.leave(ev.p)
				continue
			}
			if err := m.stranger(*ev.hello); err != nil {
				m.refuse(ev.p, err)
				continue
			}
			if err := m.join(ev.p, *ev.hello); err != nil {
				return m.fail(ctx, err)
			}
			if len(m.holders) == m.cfg.WorldSize {
				m.complete(ctx)
				return nil
			}
		}
	}
}

// join checks a Hello against the master's world and records its ranks.
func (m *master) join(p *peer, h Hello) error {
	p.hello = h
	m.joined[p] = true // so that an error reaches it too
	switch {
	case h.WorldSize != m.cfg.WorldSize:
		return &MismatchError{Peer: h, Var: EnvWorldSize, Got: strconv.Itoa(h.WorldSize),
			Want: strconv.Itoa(m.cfg.WorldSize)}
	case h.Rank < 0 || h.Ranks < 1:
		return &RankError{Rank: h.Rank, WorldSize: m.cfg.WorldSize, Peer: h}
	case h.Rank+h.Ranks > m.cfg.WorldSize:
		return &RankError{Rank: max(h.Rank, m.cfg.WorldSize), WorldSize: m.cfg.WorldSize, Peer: h}
	}
	for r := h.Rank; r < h.Rank+h.Ranks; r++ {
		if q := m.holders[r]; q != nil {
			return &RankError{Rank: r, WorldSize: m.cfg.WorldSize, Holder: &q.hello, Peer: h}
		}
	}
	for r := h.Rank; r < h.Rank+h.Ranks; r++ {
		m.holders[r] = p
	}
	m.log.Info("Member joined", "ranks", rankSpan(h.Rank, h.Ranks), "hostname", h.Hostname, "ip", h.IP,
		"role", h.Role, "joined", len(m.holders), "worldSize", m.cfg.WorldSize)
	return nil
}

// stranger is the MismatchError of a member that belongs to another job or
// epoch than the master's, nil for one of its own.
func (m *master) stranger(h Hello) error {
	switch {
	case h.Job != m.cfg.Job:
		return &MismatchError{Peer: h, Var: EnvJob, Got: strconv.Quote(h.Job), Want: strconv.Quote(m.cfg.Job)}
	case h.Epoch != m.cfg.Epoch:
		return &MismatchError{Peer: h, Var: EnvEpoch, Got: strconv.Quote(h.Epoch), Want: strconv.Quote(m.cfg.Epoch)}
	}
	return nil
}

// refuse sends a stranger its error and closes its connection.
func (m *master) refuse(p *peer, err error) {
	m.log.Info("Refused a member of another job or epoch", "err", err)
	m.reply(p, Reply{Error: err.Error()})
	_ = p.conn.Close()
}

// leave forgets a member whose connection ended before the world was complete.
func (m *master) leave(p *peer) {
	_ = p.conn.Close()
	if !m.joined[p] {
		return
	}
	delete(m.joined, p)
	for r := p.hello.Rank; r < p.hello.Rank+p.hello.Ranks; r++ {
		if m.holders[r] == p {
			delete(m.holders, r)
		}
	}
	m.log.Info("Member left before the world was complete; waiting for it to join again",
		"ranks", rankSpan(p.hello.Rank, p.hello.Ranks), "hostname", p.hello.Hostname)
}

func (m *master) timeoutError() *TimeoutError {
	var missing []int
	for r := 0; r < m.cfg.WorldSize; r++ {
		if m.holders[r] == nil {
			missing = append(missing, r)
		}
	}
	return &TimeoutError{Joined: len(m.holders), WorldSize: m.cfg.WorldSize, After: m.cfg.Timeout, Missing: missing}
}

// fail sends err to every member that joined, then for failLinger to every
// member whose Hello arrives, and returns it.
func (m *master) fail(ctx context.Context, err error) error {
	m.log.Info("Rendezvous failed", "err", err)
	rep := Reply{Error: err.Error()}
	for p := range m.joined {
		m.reply(p, rep)
	}
	linger := time.NewTimer(failLinger)
	defer linger.Stop()
	for {
		select {
		case <-ctx.Done():
			return err
		case <-linger.C:
			return err
		case ev := <-m.events:
			if ev.hello != nil && !m.joined[ev.p] {
				m.reply(ev.p, rep)
			}
		}
	}
}

// complete sends the world to every member and waits, at most
// completeGrace, for each to close its connection.
func (m *master) complete(ctx context.Context) {
	world := make([]Member, 0, m.cfg.WorldSize)
	for p := range m.joined {
		world = append(world, p.hello.members()...)
	}
	sort.Slice(world, func(i, j int) bool { return world[i].Rank < world[j].Rank })
	for p := range m.joined {
		m.reply(p, Reply{World: world})
	}
	m.log.Info("World complete", "worldSize", m.cfg.WorldSize, "members", len(m.joined))
	grace := time.NewTimer(completeGrace)
	defer grace.Stop()
	for len(m.joined) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-grace.C:
			m.log.Info("Members still connected after the world was sent", "count", len(m.joined))
			return
		case ev := <-m.events:
			if ev.hello != nil {
				m.reply(ev.p, Reply{Error: "the rendezvous is complete already"})
			}
			_ = ev.p.conn.Close()
			delete(m.joined, ev.p)
		}
	}
}

func (m *master) reply(p *peer, r Reply) {
	_ = p.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := writeLine(p.conn, r); err != nil {
		m.log.Info("Could not reply to a member", "hostname", p.hello.Hostname, "err", err)
	}
}
