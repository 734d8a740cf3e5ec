// SPDX-License-Identifier: Apache-2.0

package store

import (
	"errors"
	"testing"
)

// FuzzDecodeContinue feeds arbitrary strings to decodeContinue, which
// reads the continue token a client sends with a List call (ListClusters,
// ListQueues). Properties: a refusal is ErrInvalidContinue; an accepted
// token is of the collection's kind at a positive revision, and re-encodes
// to a token that decodes to the same value.
func FuzzDecodeContinue(f *testing.F) {
	c := &Collection[string]{kind: "clusters", dir: "/shoal/clusters/"}
	f.Add(c.encodeContinue(continueToken{Kind: "clusters", Revision: 12, Start: "eu-1\x00"}))
	f.Add(c.encodeContinue(continueToken{Kind: "jobs", Revision: 12, Start: "a"}))
	f.Add(c.encodeContinue(continueToken{Kind: "clusters", Revision: 0, Start: "../jobs/"}))
	f.Add("")
	f.Add("%%%")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := c.decodeContinue(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidContinue) {
				t.Fatalf("decodeContinue(%q) error is not ErrInvalidContinue: %v", s, err)
			}
			return
		}
		if tok.Kind != c.kind || tok.Revision <= 0 {
			t.Fatalf("decodeContinue(%q) accepted %+v", s, tok)
		}
		again, err := c.decodeContinue(c.encodeContinue(tok))
		if err != nil || again != tok {
			t.Fatalf("token %+v re-decodes as %+v, %v", tok, again, err)
		}
	})
}
