// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/registry"
)

// validTokenShape is an independent statement of the join token format:
// 6 characters, a dot, 16 characters, all of [a-z0-9] but the dot.
func validTokenShape(s string) bool {
	if len(s) != 23 || s[6] != '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 6 {
			continue
		}
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// FuzzParseToken feeds arbitrary strings to ParseToken, which reads the
// join token an unauthenticated agent sends with Register. Properties: it
// accepts exactly the strings of the token format (join tokens carry no
// checksum: the secret is checked against its stored hash); an accepted
// token splits into an id and a secret that join back to it; a refusal is
// ErrInvalidToken.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{
		"abc123.0123456789abcdef", "zzzzzz.zzzzzzzzzzzzzzzz", "ABC123.0123456789abcdef",
		"abc123.0123456789abcde", "abc123-0123456789abcdef", "abc123.0123456789abcdef\n",
		" abc123.0123456789abcdef", "", ".", "abc123.0123456789abcdeg0", "abc12\u00e9.0123456789abcdef",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, err := registry.ParseToken(s)
		want := validTokenShape(s)
		if err != nil {
			if want {
				t.Fatalf("ParseToken(%q) refused a well-formed token: %v", s, err)
			}
			if !errors.Is(err, registry.ErrInvalidToken) {
				t.Fatalf("ParseToken(%q) error is not ErrInvalidToken: %v", s, err)
			}
			if id != "" || secret != "" {
				t.Fatalf("ParseToken(%q) refused but returned %q, %q", s, id, secret)
			}
			return
		}
		if !want {
			t.Fatalf("ParseToken(%q) accepted a malformed token", s)
		}
		if len(id) != 6 || len(secret) != 16 || id+"."+secret != s {
			t.Fatalf("ParseToken(%q) = %q, %q", s, id, secret)
		}
		if h := registry.HashSecret(secret); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			t.Fatalf("HashSecret(%q) = %q, want 64 hex digits", secret, h)
		}
	})
}

// FuzzInventoryReport feeds arbitrary bytes as the inventory JSON of a
// ReportInventory call and runs what the hub does with it: decode into
// inventory.Cluster and Summarize into the cluster's status. Properties: no
// panic; the summary counts every node; and when every node's counts are
// plausible (0 to 2^20, at most 1000 nodes) its per-product GPUs add up to
// its GPUs and the free and unhealthy GPUs are between 0 and the total.
// (The hub does not refuse negative counts: see docs/development.md, Fuzzing.)
func FuzzInventoryReport(f *testing.F) {
	seed := inventory.Cluster{Name: "eu-1", Generation: 3, Labels: map[string]string{"region": "eu"}, Nodes: []inventory.Node{
		{Name: "gpu-0", Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559, CapacityGPUs: 8, GPUs: 8, UsedGPUs: 3, Ready: true},
		{Name: "gpu-1", Product: "NVIDIA-H100-80GB-HBM3", CapacityGPUs: 8, GPUs: 6, Ready: true},
		{Name: "gpu-2", GPUs: 4, Ready: false},
		{Name: "cpu-0"},
	}}
	b, err := json.Marshal(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"name":"eu-1","nodes":[]}`))
	f.Add([]byte(`{"name":"eu-1","nodes":[{"name":"n","gpus":-5,"capacityGPUs":-7,"usedGPUs":99,"ready":true}]}`))
	f.Add([]byte(`{"nodes":[{"name":"n","gpus":9223372036854775807,"ready":true}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var inv inventory.Cluster
		if err := json.Unmarshal(data, &inv); err != nil {
			return
		}
		s := registry.Summarize(inv, 7)
		if s.Generation != 7 || int(s.Nodes) != len(inv.Nodes) {
			t.Fatalf("summary %+v of %d nodes", s, len(inv.Nodes))
		}
		const plausible = 1 << 20
		for i := range inv.Nodes {
			n := &inv.Nodes[i]
			if n.GPUs < 0 || n.GPUs > plausible || n.CapacityGPUs < 0 || n.CapacityGPUs > plausible ||
				n.UsedGPUs < 0 || n.UsedGPUs > plausible || len(inv.Nodes) > 1000 {
				return
			}
		}
		var sum int32
		for _, n := range s.Products {
			sum += n
		}
		if sum != s.GPUs {
			t.Fatalf("products %v add up to %d, GPUs %d", s.Products, sum, s.GPUs)
		}
		if s.FreeGPUs < 0 || s.FreeGPUs > s.GPUs || s.UnhealthyGPUs < 0 || s.UnhealthyGPUs > s.GPUs {
			t.Fatalf("summary %+v out of bounds", s)
		}
	})
}
