// SPDX-License-Identifier: Apache-2.0

// Package freeport finds TCP ports for servers that a caller starts a
// moment later (an embedded etcd, the processes of a dev fleet).
//
// Asking the kernel for port 0 and closing the listener hands out a port of
// the ephemeral range, the range the kernel also gives every outgoing
// connection: on a busy machine a client's connection may take the port
// before the server binds it, and the server fails with "address already in
// use". Pick returns ports below that range instead, where the kernel never
// puts a connection on its own. Callers of Pick, in this process or in
// others (test packages run side by side), never get one port within two
// minutes of each other: each port handed out is claimed by a file in
// os.TempDir()/shoal-freeport, by then its server has bound it, and the
// listen probe sees it taken.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Range is the span Pick chooses from, [Low, High).
type Range struct{ Low, High int }

// lowest is the bottom of the span: above the well-known and the registered
// ports most services use, and above `shoal dev`'s fixed layout
// (devfleet.DefaultBasePort, 16400 onwards).
const lowest = 20000

// rangeFile holds the kernel's ephemeral range ("32768\t60999").
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// below returns the span under an ephemeral range starting at ephemeralLow,
// or false when there is too little room (fewer than 1,000 ports).
func below(ephemeralLow int) (Range, bool) {
	r := Range{Low: lowest, High: ephemeralLow}
	return r, r.High-r.Low >= 1000
}

// span reads the kernel's ephemeral range and returns the span below it.
func span() (Range, bool) {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return Range{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return Range{}, false
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return Range{}, false
	}
	return below(low)
}

// Pick returns a TCP port on ip that was free a moment ago, outside the
// kernel's ephemeral range when there is room below it (else a port the
// kernel picks).
func Pick(ip string) (int, error) {
	r, ok := span()
	if !ok {
		return kernel(ip)
	}
	return pickIn(ip, r, rand.IntN)
}

// pickIn tries up to 100 ports of r from a random start.
func pickIn(ip string, r Range, intn func(int) int) (int, error) {
	n := r.High - r.Low
	start := intn(n)
	for i := range 100 {
		p := r.Low + (start+i*7919)%n // a prime stride spreads the tries
		if !claim(p, time.Now()) {
			continue
		}
		if !listenable(ip, p) {
			continue
		}
		return p, nil
	}
	return 0, fmt.Errorf("freeport: no free port on %s in %d-%d after 100 tries", ip, r.Low, r.High-1)
}

// listenable reports whether a server could bind port p on ip and on every
// address: a server given the port may bind the wildcard (a pod on the host
// network serving 0.0.0.0:p), which fails while any address holds p, even
// one other than ip (a server of another test on 127.0.0.1:p while ip is the
// host's own address).
func listenable(ip string, p int) bool {
	for _, host := range []string{ip, ""} {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}

// kernel asks the kernel for a port (of its ephemeral range).
func kernel(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("freeport: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// claimFor is how long a port handed out stays claimed: long enough for its
// server to bind it.
const claimFor = 2 * time.Minute

// claim takes port p for this caller: it creates p's claim file, or takes
// over one older than claimFor. It reports false when another caller
// claimed p less than claimFor ago. Without a usable directory it claims
// nothing and says yes (the listen probe still runs).
func claim(p int, now time.Time) bool {
	dir := filepath.Join(os.TempDir(), "shoal-freeport")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	path := filepath.Join(dir, strconv.Itoa(p))
	for range 2 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err == nil {
			_ = f.Close()
			return true
		}
		if !os.IsExist(err) {
			return true
		}
		fi, err := os.Stat(path)
		if err != nil || now.Sub(fi.ModTime()) < claimFor {
			return false
		}
		_ = os.Remove(path) // stale: its server bound the port or never came
	}
	return false
}

// Addr returns "ip:port" for a port Pick chose, for servers that take a
// listen address.
func Addr(ip string) (string, error) {
	p, err := Pick(ip)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(ip, strconv.Itoa(p)), nil
}
