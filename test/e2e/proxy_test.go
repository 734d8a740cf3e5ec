// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"net"
	"sync"
	"testing"
)

// freezer is a loopback TCP proxy to one address that the test can freeze:
// frozen, it keeps every connection open and accepts new ones but forwards
// no byte in either direction, as a network partition does (no reset, no
// close), until thawed.
type freezer struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen bool
	thawed chan struct{} // closed while not frozen
	conns  []net.Conn
}

// newFreezer listens on 127.0.0.1 and forwards to target until the test ends.
func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, thawed: make(chan struct{})}
	close(f.thawed)
	go f.serve()
	t.Cleanup(f.close)
	return f
}

// Addr is the proxy's address.
func (f *freezer) Addr() string { return f.ln.Addr().String() }

// Dial connects to the proxy whatever address is asked (a rest.Config.Dial).
func (f *freezer) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", f.Addr())
}

// Freeze stops forwarding.
func (f *freezer) Freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.frozen {
		f.frozen, f.thawed = true, make(chan struct{})
	}
}

// Thaw forwards again.
func (f *freezer) Thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		f.frozen = false
		close(f.thawed)
	}
}

func (f *freezer) gate() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.thawed
}

func (f *freezer) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, up)
		f.mu.Unlock()
		go f.pipe(up, c)
		go f.pipe(c, up)
	}
}

// pipe copies from src to dst, holding each chunk while frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-f.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or closed: end both sides
			return
		}
	}
}

func (f *freezer) close() {
	_ = f.ln.Close()
	f.Thaw()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		_ = c.Close()
	}
}
