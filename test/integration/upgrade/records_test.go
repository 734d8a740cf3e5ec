// SPDX-License-Identifier: Apache-2.0

package upgrade_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/store/migrate"
)

// storedRecord is one record as stored and as this release reads it.
type storedRecord struct {
	kind, name string
	version    int    // the stored version (migrate.Legacy when none)
	raw        []byte // the stored bytes
}

// hubRecords opens the stopped hub's embedded etcd (dataDir/etcd), reads
// every record and decodes each with this release's types through its
// kind's schema. It fails the test on a key of no known kind and on a
// record that does not decode.
func hubRecords(t *testing.T, dataDir string) map[string][]storedRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DataDir: filepath.Join(dataDir, "etcd")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{st.ClientURL()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	resp, err := cli.Get(ctx, st.Prefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"elections": true}
	for _, k := range migrate.Kinds() {
		known[k] = true
	}
	out := map[string][]storedRecord{}
	for _, kv := range resp.Kvs {
		kind, name, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), st.Prefix()), "/")
		if !known[kind] {
			t.Errorf("stored key %s is of no known kind", kv.Key)
			continue
		}
		if kind == "elections" {
			continue
		}
		v, err := migrate.StoredVersion(kv.Value)
		if err != nil {
			t.Errorf("%s: %v", kv.Key, err)
		}
		out[kind] = append(out[kind], storedRecord{kind: kind, name: name, version: v, raw: kv.Value})
	}
	for kind := range out {
		n, err := decodeKind(ctx, st, kind)
		if err != nil {
			t.Errorf("kind %s: %v", kind, err)
		} else if n != len(out[kind]) {
			t.Errorf("kind %s: decoded %d records of %d", kind, n, len(out[kind]))
		}
	}
	return out
}

// decodeKind lists kind with the type its owner stores (a generic object
// for the owners' unexported types) and returns how many records decoded.
func decodeKind(ctx context.Context, st *store.Store, kind string) (int, error) {
	switch kind {
	case "jobs":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*v1alpha1.Job]()), checkJob)
	case "queues":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*v1alpha1.Queue]()), nil)
	case "clusters":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*v1alpha1.Cluster]()), nil)
	case "jointokens":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*v1alpha1.JoinToken]()), nil)
	case "users":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*v1alpha1.User]()), nil)
	case "rollouts":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*v1alpha1.Rollout]()), nil)
	case "inventories":
		return decodeAll(ctx, store.NewCollection(st, kind, registry.InventoryCodec()), nil)
	case "reservations":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*ledger.Reservation]()), nil)
	case "ledgerclusters":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*ledger.ClusterVersion]()), nil)
	case "fairshare":
		return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[*placement.FairShareState]()), nil)
	}
	return decodeAll(ctx, store.NewCollection(st, kind, store.JSONCodec[map[string]any]()), nil)
}

func decodeAll[T any](ctx context.Context, c *store.Collection[T], check func(string, T) error) (int, error) {
	res, err := c.List(ctx, store.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, it := range res.Items {
		if check != nil {
			if err := check(it.Name, it.Object); err != nil {
				return 0, err
			}
		}
	}
	return len(res.Items), nil
}

// checkJob holds for a job as this release reads it: every member placed
// on a cluster names its cluster's namespace (jobs version 2).
func checkJob(name string, j *v1alpha1.Job) error {
	for _, m := range j.Status.Members {
		if m.Cluster != "" && m.Namespace != v1alpha1.ClusterNamespace(m.Cluster) {
			return fmt.Errorf("job %s member %d on %s: namespace %q", name, m.Index, m.Cluster, m.Namespace)
		}
	}
	return nil
}

// dumpJobs writes the stored job records into $SHOAL_UPGRADE_TESTDATA/jobs
// when it is set (hack/upgrade-testdata.sh): the fixtures of
// hub/store/migrate's tests.
func dumpJobs(t *testing.T, recs []storedRecord) {
	t.Helper()
	dir := os.Getenv("SHOAL_UPGRADE_TESTDATA")
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, "jobs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := os.WriteFile(filepath.Join(dir, r.name+".json"), append(r.raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d job records of the previous release into %s", len(recs), dir)
}
