// SPDX-License-Identifier: Apache-2.0

package store

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// TestMapErrUnavailable: etcd's timeouts and leader troubles, as the client
// returns them (typed or as gRPC statuses), become ErrUnavailable; other
// errors do not.
func TestMapErrUnavailable(t *testing.T) {
	for _, err := range []error{rpctypes.ErrTimeout, rpctypes.ErrGRPCTimeoutDueToConnectionLost, rpctypes.ErrNoLeader,
		fmt.Errorf("put: %w", rpctypes.ErrLeaderChanged), rpctypes.ErrGRPCTimeoutDueToLeaderFail} {
		if got := mapErr(err); !errors.Is(got, ErrUnavailable) || !errors.Is(got, err) {
			t.Errorf("mapErr(%v) = %v, want ErrUnavailable wrapping it", err, got)
		}
	}
	for _, err := range []error{rpctypes.ErrCompacted, rpctypes.ErrKeyNotFound, errors.New("boom")} {
		if errors.Is(mapErr(err), ErrUnavailable) {
			t.Errorf("mapErr(%v) is ErrUnavailable", err)
		}
	}
}
