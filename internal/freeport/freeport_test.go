// SPDX-License-Identifier: Apache-2.0

package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestBelowTheEphemeralRange(t *testing.T) {
	if r, ok := below(32768); !ok || r.Low != 20000 || r.High != 32768 {
		t.Fatalf("below(32768) = %+v, %v; want [20000, 32768)", r, ok)
	}
	if _, ok := below(20500); ok {
		t.Fatal("below(20500) leaves 500 ports, want no span")
	}
}

// TestPickSkipsAPortInUse holds the port a pick would start at and checks
// that Pick returns another port of the span, one it can listen on.
func TestPickSkipsAPortInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Close() }()
	// A span whose first try is the held port.
	hp := held.Addr().(*net.TCPAddr).Port
	r := Range{Low: hp, High: hp + 5000}
	p, err := pickIn("127.0.0.1", r, func(int) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	if p == hp || p < r.Low || p >= r.High {
		t.Fatalf("picked %d; want a port of [%d, %d) other than the held %d", p, r.Low, r.High, hp)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("listen on the picked port: %v", err)
	}
	_ = l.Close()
}

// TestPickSkipsAPortHeldOnAnotherAddress holds a port on 127.0.0.1 and picks
// for 127.0.0.2: the port is free there, but a server given it may bind the
// wildcard address (as the agent's chart does: --health-listen=0.0.0.0:p),
// which the held port forbids. CI once failed so: "listen tcp
// 0.0.0.0:29231: bind: address already in use".
func TestPickSkipsAPortHeldOnAnotherAddress(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Close() }()
	hp := held.Addr().(*net.TCPAddr).Port
	if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(hp))); err != nil {
		t.Skipf("127.0.0.2 is not a loopback address here: %v", err)
	} else {
		_ = l.Close()
	}
	r := Range{Low: hp, High: hp + 5000}
	p, err := pickIn("127.0.0.2", r, func(int) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	if p == hp {
		t.Fatalf("picked %d, which 127.0.0.1 holds: a server binding 0.0.0.0:%d would fail", p, p)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("listen on the wildcard address with the picked port: %v", err)
	}
	_ = l.Close()
}

func TestPickIsOutsideTheEphemeralRange(t *testing.T) {
	r, ok := span()
	if !ok {
		t.Skip("no room below this machine's ephemeral range")
	}
	for range 20 {
		p, err := Pick("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if p < r.Low || p >= r.High {
			t.Fatalf("picked %d, want one of [%d, %d)", p, r.Low, r.High)
		}
	}
}

// TestPickNeverHandsOutOnePortTwice: ports picked one after another (and
// closed at once, as a caller does before its server binds) are distinct.
func TestPickNeverHandsOutOnePortTwice(t *testing.T) {
	if _, ok := span(); !ok {
		t.Skip("no room below this machine's ephemeral range")
	}
	seen := map[int]bool{}
	for range 300 {
		p, err := Pick("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

// TestAddrsDoNotRepeat takes many addresses in a row, as a test starting
// several servers does, and checks that none repeats: a port closed by the
// kernel's port-0 probe may be handed out again at once, which CI's
// three-replica hub hit ("listen tcp 127.0.0.1:46351: bind: address already
// in use" — two replicas given one port).
func TestAddrsDoNotRepeat(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		a, err := Addr("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("Addr = %q (%v), want 127.0.0.1:port", a, err)
		}
		if seen[a] {
			t.Fatalf("Addr handed out %s twice", a)
		}
		seen[a] = true
	}
}
