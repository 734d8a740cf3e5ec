// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"errors"
	"testing"

	"github.com/shoal-dev/shoal/hub/store"
)

// FuzzDecodeCursor feeds arbitrary strings to decodeCursor, which reads
// the continue token a client sends with ListJobs. Properties: a refusal is
// store.ErrInvalidContinue; an accepted cursor has a positive revision and
// batch and no position of an older hub's token, and re-encodes to a token
// that decodes to the same cursor.
func FuzzDecodeCursor(f *testing.F) {
	for _, c := range []cursor{{Rev: 42, Batch: 500}, {Rev: 7, Batch: 100, After: "job-7", Latest: true}, {Rev: 7, Store: "eyJrIjoiam9icyJ9", Batch: 100, Skip: 3}} {
		f.Add(encodeCursor(c))
	}
	f.Add("")
	f.Add("eyJyIjotMSwiYiI6MX0") // {"r":-1,"b":1}
	f.Add("not base64!")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidContinue) {
				t.Fatalf("decodeCursor(%q) error is not ErrInvalidContinue: %v", s, err)
			}
			return
		}
		if c.Rev <= 0 || c.Batch <= 0 || c.Skip != 0 || c.Store != "" {
			t.Fatalf("decodeCursor(%q) accepted %+v", s, c)
		}
		again, err := decodeCursor(encodeCursor(c))
		if err != nil || again != c {
			t.Fatalf("cursor %+v re-decodes as %+v, %v", c, again, err)
		}
	})
}

// TestDecodeCursorRefusesOlderTokens: a token of a hub before the scan
// kept its position by name (a store token and a count to skip) would
// start the list over if read as today's; it is refused instead.
func TestDecodeCursorRefusesOlderTokens(t *testing.T) {
	for _, c := range []cursor{{Rev: 7, Store: "eyJrIjoiam9icyJ9", Batch: 100, Skip: 3}, {Rev: 7, Batch: 100, Skip: 1}} {
		if _, err := decodeCursor(encodeCursor(c)); !errors.Is(err, store.ErrInvalidContinue) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
