// SPDX-License-Identifier: Apache-2.0

package ha_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// balancer stands in for the hub's Service: each connection goes to the
// next replica that accepts it, so agents that dial one address reach a
// live replica after one dies.
type balancer struct {
	ln      net.Listener
	targets func() []string
	mu      sync.Mutex
	next    int
	conns   map[net.Conn]bool
}

func newBalancer(t *testing.T, targets func() []string) *balancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{ln: ln, targets: targets, conns: map[net.Conn]bool{}}
	go b.serve()
	t.Cleanup(b.close)
	return b
}

// Addr is the address agents dial.
func (b *balancer) Addr() string { return b.ln.Addr().String() }

func (b *balancer) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.forward(c)
	}
}

func (b *balancer) forward(c net.Conn) {
	targets := b.targets()
	b.mu.Lock()
	start := b.next
	b.next++
	b.mu.Unlock()
	for i := range targets {
		up, err := net.Dial("tcp", targets[(start+i)%len(targets)])
		if err != nil {
			continue
		}
		if !b.track(c, up) {
			return
		}
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		_, _ = io.Copy(c, up)
		_ = c.Close()
		b.untrack(c, up)
		return
	}
	_ = c.Close()
}

func (b *balancer) track(conns ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		b.conns[c] = true
	}
	return true
}

func (b *balancer) untrack(conns ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range conns {
		delete(b.conns, c)
	}
}

func (b *balancer) close() {
	_ = b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
}
