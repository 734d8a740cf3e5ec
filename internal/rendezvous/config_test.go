// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"errors"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{"MASTER_ADDR": "demo-0.demo", "MASTER_PORT": "29500", "WORLD_SIZE": "8", "RANK": "4"}
	}
	with := func(kv ...string) map[string]string {
		m := base()
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<unset>" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	for _, c := range []struct {
		name    string
		env     map[string]string
		want    Config
		wantVar string // the ConfigError's variable; "" when it must parse
	}{
		{name: "torchrun", env: with("SHOAL_JOB", "demo", "SHOAL_ROLE", "worker", "SHOAL_MEMBER_INDEX", "2", "SHOAL_EPOCH", "3"),
			want: Config{MasterAddr: "demo-0.demo", MasterPort: 29500, WorldSize: 8, Rank: 4, LocalWorldSize: 1,
				Job: "demo", Epoch: "3", Role: "worker", MemberIndex: "2", Timeout: DefaultTimeout}},
		{name: "rank from NODE_RANK", env: with("RANK", "<unset>", "NODE_RANK", "2", "LOCAL_WORLD_SIZE", "2",
			"SHOAL_RENDEZVOUS_TIMEOUT", "5s"),
			want: Config{MasterAddr: "demo-0.demo", MasterPort: 29500, WorldSize: 8, Rank: 4, LocalWorldSize: 2, Timeout: 5 * time.Second}},
		{name: "PET aliases only", env: map[string]string{"PET_MASTER_ADDR": "m", "PET_MASTER_PORT": "1234", "WORLD_SIZE": "4",
			"PET_NODE_RANK": "1", "PET_NPROC_PER_NODE": "2", "PET_NNODES": "2"},
			want: Config{MasterAddr: "m", MasterPort: 1234, WorldSize: 4, Rank: 2, LocalWorldSize: 2, Timeout: DefaultTimeout}},
		{name: "PET_NPROC_PER_NODE auto is not a count", env: with("PET_NPROC_PER_NODE", "auto"),
			want: Config{MasterAddr: "demo-0.demo", MasterPort: 29500, WorldSize: 8, Rank: 4, LocalWorldSize: 1, Timeout: DefaultTimeout}},
		{name: "aliases agree", env: with("PET_MASTER_ADDR", "demo-0.demo", "PET_MASTER_PORT", "29500"),
			want: Config{MasterAddr: "demo-0.demo", MasterPort: 29500, WorldSize: 8, Rank: 4, LocalWorldSize: 1, Timeout: DefaultTimeout}},
		{name: "aliases differ", env: with("PET_MASTER_ADDR", "other"), wantVar: "MASTER_ADDR"},
		{name: "port aliases differ", env: with("PET_MASTER_PORT", "1"), wantVar: "MASTER_PORT"},
		{name: "no master", env: with("MASTER_ADDR", "<unset>"), wantVar: "MASTER_ADDR"},
		{name: "no port", env: with("MASTER_PORT", "<unset>"), wantVar: "MASTER_PORT"},
		{name: "port out of range", env: with("MASTER_PORT", "70000"), wantVar: "MASTER_PORT"},
		{name: "no world size", env: with("WORLD_SIZE", "<unset>"), wantVar: "WORLD_SIZE"},
		{name: "world size not a number", env: with("WORLD_SIZE", "four"), wantVar: "WORLD_SIZE"},
		{name: "no rank", env: with("RANK", "<unset>"), wantVar: "RANK"},
		{name: "rank outside world", env: with("RANK", "8"), wantVar: "RANK"},
		{name: "ranks run past the world", env: with("LOCAL_WORLD_SIZE", "8"), wantVar: "RANK"},
		{name: "rank disagrees with NODE_RANK", env: with("NODE_RANK", "1", "LOCAL_WORLD_SIZE", "2"), wantVar: "RANK"},
		{name: "NODE_RANK past PET_NNODES", env: with("NODE_RANK", "4", "PET_NNODES", "4"), wantVar: "NODE_RANK"},
		{name: "zero processes", env: with("LOCAL_WORLD_SIZE", "0"), wantVar: "LOCAL_WORLD_SIZE"},
		{name: "bad timeout", env: with("SHOAL_RENDEZVOUS_TIMEOUT", "soon"), wantVar: "SHOAL_RENDEZVOUS_TIMEOUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := FromEnv(env(c.env))
			if c.wantVar != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Var != c.wantVar {
					t.Fatalf("got %v (%+v), want a ConfigError for %s", err, got, c.wantVar)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
