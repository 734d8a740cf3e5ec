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
