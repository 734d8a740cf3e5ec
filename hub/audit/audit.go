// SPDX-License-Identifier: Apache-2.0

// Package audit writes the hub's audit log: one JSON line per mutating API
// call (docs/security.md, "Audit log").
package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Entry is one audited call.
type Entry struct {
	// Time is when the call ended (RFC 3339, UTC).
	Time time.Time `json:"time"`
	// User is the caller (a user name, "admin" for the bootstrap admin,
	// "agent:<cluster>" for an agent, "" when unauthenticated).
	User string `json:"user"`
	// Auth is how the caller authenticated: "certificate" or "oidc"
	// ("" when it did not).
	Auth string `json:"auth,omitempty"`
	// OIDCUsername is the verified ID token's username (oidc only).
	OIDCUsername string `json:"oidcUsername,omitempty"`
	// Method is the gRPC method, e.g. Jobs/Submit.
	Method string `json:"method"`
	// Object names the object the call was about, when it names one.
	Object string `json:"object,omitempty"`
	// Queue is the queue of that object, when it has one.
	Queue string `json:"queue,omitempty"`
	// Code is the gRPC status code of the result (OK on success).
	Code string `json:"code"`
	// Error is the error message sent to the caller, on failure.
	Error string `json:"error,omitempty"`
}

// Log writes entries as JSON lines; a nil *Log writes nothing.
type Log struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

// New returns a Log writing to w.
func New(w io.Writer) *Log { return &Log{w: w} }

// Open opens the audit log at path: "" is no log (nil), "-" is stderr,
// anything else a file appended to (created 0600).
func Open(path string) (*Log, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		return New(os.Stderr), nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &Log{w: f, c: f}, nil
}

// Write writes e as one line; it returns the write's error.
func (l *Log) Write(e Entry) error {
	if l == nil {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

// Close closes the file Open opened.
func (l *Log) Close() error {
	if l == nil || l.c == nil {
		return nil
	}
	return l.c.Close()
}
