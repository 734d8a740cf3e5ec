// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"k8s.io/klog/v2"
)

// Retry pacing of Join: the first retry after minBackoff, doubling up to
// maxBackoff; a progress line every logEvery.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
	logEvery   = 10 * time.Second
)

// Join connects to the master at cfg.MasterHostPort, sends this member's
// Hello and returns the world, in rank order, once the master has seen every
// rank. It retries name resolution and connection, and reconnects when the
// connection ends without a reply (a master that restarted), until
// cfg.Timeout; then it returns a ConnectError, or a NoWorldError when it had
// reached the master. An error the master sends ends Join at once
// (MasterError). When ctx ends first, the error is ctx's, or a ConnectError
// when the last attempt had not got through.
func Join(ctx context.Context, cfg Config) ([]Member, error) {
	log := klog.FromContext(ctx).WithValues("rank", cfg.Rank, "master", cfg.MasterHostPort())
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var (
		last      error
		reached   bool
		backoff   = minBackoff
		lastLog   time.Time
		addr      = cfg.MasterHostPort()
		connected bool
	)
	for {
		world, err := joinOnce(dctx, cfg, &connected)
		if err == nil {
			return world, nil
		}
		var me *MasterError
		if errors.As(err, &me) {
			return nil, err
		}
		reached, last = reached || connected, err
		if time.Since(lastLog) >= logEvery {
			log.Info("Waiting for the master", "reached", connected, "err", err)
			lastLog = time.Now()
		}
		select {
		case <-time.After(backoff):
			backoff = min(2*backoff, maxBackoff)
			continue
		case <-dctx.Done():
		}
		if ctx.Err() != nil {
			if !connected && last != nil { // say why it had not got through
				return nil, &ConnectError{Rank: cfg.Rank, Addr: addr, After: time.Since(start).Round(time.Millisecond), Last: last}
			}
			return nil, ctx.Err()
		}
		if connected {
			return nil, &NoWorldError{Rank: cfg.Rank, Addr: addr, After: cfg.Timeout, WorldSize: cfg.WorldSize}
		}
		if reached {
			last = fmt.Errorf("%w (it had been reached before)", last)
		}
		return nil, &ConnectError{Rank: cfg.Rank, Addr: addr, After: cfg.Timeout, Last: last}
	}
}

// joinOnce is one connection to the master; connected says whether it got
// as far as sending the Hello.
func joinOnce(ctx context.Context, cfg Config, connected *bool) ([]Member, error) {
	*connected = false
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", cfg.MasterHostPort())
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	h := Hello{Rank: cfg.Rank, Ranks: cfg.LocalWorldSize, WorldSize: cfg.WorldSize, Job: cfg.Job, Epoch: cfg.Epoch,
		MemberIndex: cfg.MemberIndex, Role: cfg.Role, Hostname: cfg.Hostname, IP: localIP(conn)}
	if err := writeLine(conn, h); err != nil {
		return nil, err
	}
	*connected = true
	var rep Reply
	if err := newLineReader(conn).next(&rep); err != nil {
		return nil, err
	}
	if rep.Error != "" {
		return nil, &MasterError{Rank: cfg.Rank, Addr: cfg.MasterHostPort(), Message: rep.Error}
	}
	if err := checkWorld(rep.World, h); err != nil {
		return nil, &MasterError{Rank: cfg.Rank, Addr: cfg.MasterHostPort(), Message: err.Error()}
	}
	return rep.World, nil
}

// checkWorld verifies the master's world: every rank once, in order, this
// member's ranks its own.
func checkWorld(world []Member, h Hello) error {
	if len(world) != h.WorldSize {
		return fmt.Errorf("a world of %d ranks, want %d", len(world), h.WorldSize)
	}
	for i, m := range world {
		if m.Rank != i {
			return fmt.Errorf("a world with rank %d at position %d", m.Rank, i)
		}
		if i >= h.Rank && i < h.Rank+h.Ranks && (m.Hostname != h.Hostname || m.IP != h.IP) {
			return fmt.Errorf("a world with rank %d on host %s (ip %s), but this member holds it", i, m.Hostname, m.IP)
		}
	}
	return nil
}

// localIP is the address this member has on its connection to the master.
func localIP(c net.Conn) string {
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.LocalAddr().String()
}
