// SPDX-License-Identifier: Apache-2.0

package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestPreconditionIs(t *testing.T) {
	err := fmt.Errorf("submit: %w", Precondition(`queue "a" does not exist`, "create it"))
	if !errors.Is(err, ErrFailedPrecondition) {
		t.Fatal("not a failed precondition")
	}
	if err.Error() != `submit: queue "a" does not exist; create it` {
		t.Errorf("message %q", err)
	}
	var pe *PreconditionError
	if !errors.As(err, &pe) || pe.Hint != "create it" {
		t.Errorf("As: %+v", pe)
	}
}

func TestOf(t *testing.T) {
	sentinel := errors.New("store: object not found")
	err := fmt.Errorf("get: %w", Of(sentinel, "job %q not found", "a"))
	if !errors.Is(err, sentinel) || err.Error() != `get: job "a" not found` {
		t.Errorf("got %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	cause := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	err := fmt.Errorf("submit: %w", Unavailable("the hub cluster", cause))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatal("not unavailable")
	}
	if !errors.Is(err, cause) {
		t.Fatal("cause lost")
	}
	if want := "submit: the hub cluster is unavailable: " + cause.Error(); err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Dependency != "the hub cluster" {
		t.Errorf("As: %+v", ue)
	}
	if errors.Is(err, ErrFailedPrecondition) {
		t.Error("unavailable is a failed precondition")
	}
}
