// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// progress shows how far a long operation is, from the state it waits on
// (members running, clusters of a rollout synced, fleet steps done): on a
// terminal one bar rewritten in place, elsewhere (a pipe, CI logs) one
// plain line each time the numbers or the status change. It never moves
// by itself: each Update is a state the caller observed.
type progress struct {
	w     io.Writer
	tty   bool
	label string
	// last is the last line written, to write nothing when nothing changed.
	last  string
	width int
	open  bool
	// tenths, when set, keeps a plain (not terminal) progress to one line
	// per tenth of the total and the last step: for long operations whose
	// steps are many and already logged.
	tenths bool
	// lastTenth is the tenth of the last plain line written.
	lastTenth int
}

// barWidth is the bar's number of cells on a terminal.
const barWidth = 24

// newProgress writes to w, as a bar when w is a terminal.
func newProgress(w io.Writer, label string) *progress {
	return &progress{w: w, tty: isTerminal(w), label: label, width: barWidth, lastTenth: -1}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Update shows done of total and a short status ("Placed: 2/4 members
// prepared"); total 0 shows the status alone.
func (p *progress) Update(done, total int, status string) {
	line := p.format(done, total, status)
	if line == p.last {
		return
	}
	if p.tenths && !p.tty && total > 0 {
		tenth := min(max(done, 0), total) * 10 / total
		if tenth == p.lastTenth && done < total {
			return
		}
		p.lastTenth = tenth
	}
	p.last = line
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.open = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// Writer returns a writer for log lines printed while the bar is shown:
// on a terminal each write clears the bar's line first and draws the bar
// again after it.
func (p *progress) Writer() io.Writer {
	if !p.tty {
		return p.w
	}
	return barLogWriter{p}
}

type barLogWriter struct{ p *progress }

func (b barLogWriter) Write(data []byte) (int, error) {
	if b.p.open {
		fmt.Fprint(b.p.w, "\r\033[K")
	}
	n, err := b.p.w.Write(data)
	if b.p.open {
		fmt.Fprint(b.p.w, b.p.last)
	}
	return n, err
}

// Finish ends the bar's line (on a terminal) so that what follows starts
// on a line of its own.
func (p *progress) Finish() {
	if p.tty && p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

func (p *progress) format(done, total int, status string) string {
	if total <= 0 {
		return fmt.Sprintf("%s: %s", p.label, status)
	}
	done = min(max(done, 0), total)
	if !p.tty {
		return fmt.Sprintf("%s: %d/%d %s", p.label, done, total, status)
	}
	fill := done * p.width / total
	return fmt.Sprintf("%s [%s%s] %d/%d %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", p.width-fill), done, total, status)
}
