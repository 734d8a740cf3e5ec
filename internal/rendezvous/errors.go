// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConfigError is an environment variable that is missing or wrong.
type ConfigError struct {
	Var    string
	Reason string
}

func (e *ConfigError) Error() string { return e.Var + ": " + e.Reason }

// TimeoutError is the master giving up: not every rank joined in time.
type TimeoutError struct {
	Joined, WorldSize int
	After             time.Duration
	Missing           []int
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("rank 0: %d of %d ranks joined after %s; missing ranks [%s]",
		e.Joined, e.WorldSize, e.After, rankList(e.Missing))
}

// MismatchError is a peer whose world differs from the master's: another
// WORLD_SIZE (which ends the rendezvous), or another SHOAL_JOB or
// SHOAL_EPOCH (which refuses that peer only).
type MismatchError struct {
	Peer       Hello
	Var        string
	Got, Want  string
	MasterRank int
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s has %s=%s but rank %d (the master) has %s=%s",
		e.Peer.describe(), e.Var, e.Got, e.MasterRank, e.Var, e.Want)
}

// RankError is a peer claiming a rank that is outside the world or already
// held by another member.
type RankError struct {
	Rank      int
	WorldSize int
	// Holder is the member that holds Rank already; nil when Rank is
	// outside the world.
	Holder *Hello
	Peer   Hello
}

func (e *RankError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("%s claims rank %d, outside a world of size %d", e.Peer.describe(), e.Rank, e.WorldSize)
	}
	return fmt.Sprintf("rank %d claimed twice: by %s and by %s", e.Rank, e.Holder.describe(), e.Peer.describe())
}

// ConnectError is a member that could not reach the master in time.
type ConnectError struct {
	Rank  int
	Addr  string
	After time.Duration
	Last  error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("rank %d: could not reach the master at %s after %s: %v", e.Rank, e.Addr, e.After, e.Last)
}

func (e *ConnectError) Unwrap() error { return e.Last }

// NoWorldError is a member that reached the master but got no world in time.
type NoWorldError struct {
	Rank      int
	Addr      string
	After     time.Duration
	WorldSize int
}

func (e *NoWorldError) Error() string {
	return fmt.Sprintf("rank %d: joined the master at %s but got no world after %s (the master waits for all %d ranks)",
		e.Rank, e.Addr, e.After, e.WorldSize)
}

// MasterError is the error the master answered a member with (the one that
// ended the rendezvous, or its refusal of a stranger).
type MasterError struct {
	Rank    int
	Addr    string
	Message string
}

func (e *MasterError) Error() string {
	return fmt.Sprintf("rank %d: the master at %s answered: %s", e.Rank, e.Addr, e.Message)
}

// rankSpan is "3" or "4-7".
func rankSpan(first, n int) string {
	if n <= 1 {
		return strconv.Itoa(first)
	}
	return fmt.Sprintf("%d-%d", first, first+n-1)
}

// rankList writes sorted ranks with runs collapsed: "3 5-7".
func rankList(ranks []int) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		parts = append(parts, rankSpan(ranks[i], j-i+1))
		i = j + 1
	}
	return strings.Join(parts, " ")
}
