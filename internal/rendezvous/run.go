// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// Run is one member's whole rendezvous: the member holding rank 0 serves the
// master on MasterPort (all addresses) while it joins like every other
// member; each member writes the world to out (Print). For the master's
// member the error is the master's verdict (Serve) when it failed, else its
// own member's.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	if cfg.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("hostname: %w", err)
		}
		cfg.Hostname = h
	}
	if !cfg.IsMaster() {
		world, err := Join(ctx, cfg)
		if err != nil {
			return err
		}
		return Print(out, world)
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", ":"+strconv.Itoa(cfg.MasterPort)); err != nil {
			return fmt.Errorf("rank 0: listen on port %d: %w", cfg.MasterPort, err)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jctx, jcancel := context.WithCancel(ctx)
	defer jcancel()
	served := make(chan error, 1)
	go func() {
		err := Serve(sctx, ln, cfg)
		if err != nil {
			jcancel() // the master's verdict is final for its own member too
		}
		served <- err
	}()
	// The master's own member waits for the master's verdict rather than
	// time out on its own: leaving first would count it as missing. Serve
	// ends within Timeout plus failLinger and then ends this Join.
	jcfg := cfg
	jcfg.Timeout += failLinger + time.Second
	world, jerr := Join(jctx, jcfg)
	if jerr == nil {
		if err := Print(out, world); err != nil {
			cancel()
			return errors.Join(err, <-served)
		}
	}
	// Serve always ends: the world complete, a failure, or its timeout.
	serr := <-served
	var ce *ConnectError
	switch {
	case serr != nil && errors.As(jerr, &ce):
		return errors.Join(serr, jerr) // rank 0 could not reach itself: both say why
	case serr != nil:
		return serr
	}
	return jerr
}

// Print writes the world, one line per rank in rank order, then
// "rendezvous complete: world size N". An empty field prints as "-".
func Print(out io.Writer, world []Member) error {
	for _, m := range world {
		if _, err := fmt.Fprintf(out, "rank=%d hostname=%s ip=%s role=%s member=%s\n",
			m.Rank, dash(m.Hostname), dash(m.IP), dash(m.Role), dash(m.MemberIndex)); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(out, "rendezvous complete: world size %d\n", len(world))
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
