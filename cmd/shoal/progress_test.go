// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressPlainLinesOnlyOnChange(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "job/a")
	p.Update(0, 4, "Pending")
	p.Update(0, 4, "Pending")
	p.Update(2, 4, "Placed")
	p.Update(9, 4, "Running")
	p.Finish()
	want := "job/a: 0/4 Pending\njob/a: 2/4 Placed\njob/a: 4/4 Running\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

func TestProgressBarRewritesItsLine(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "up")
	p.tty, p.width = true, 4
	p.Update(1, 4, "a")
	p.Update(4, 4, "b")
	p.Finish()
	want := "\r\033[Kup [=   ] 1/4 a\r\033[Kup [====] 4/4 b\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	p = newProgress(&b, "x")
	p.Update(0, 0, "waiting")
	if !strings.HasPrefix(b.String(), "x: waiting") {
		t.Fatalf("got %q", b.String())
	}
}

func TestProgressTenthsAndLogLines(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "up")
	p.tenths = true
	for i := 0; i <= 20; i++ {
		p.Update(i, 20, "step")
	}
	if n := strings.Count(b.String(), "\n"); n != 11 || !strings.HasSuffix(b.String(), "up: 20/20 step\n") {
		t.Fatalf("%d lines, want one per tenth (11) ending with the last step:\n%s", n, b.String())
	}
	b.Reset()
	p = newProgress(&b, "up")
	p.tty, p.width = true, 2
	p.Update(1, 2, "a")
	_, _ = p.Writer().Write([]byte("log line\n"))
	want := "\r\033[Kup [= ] 1/2 a\r\033[Klog line\nup [= ] 1/2 a"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}
