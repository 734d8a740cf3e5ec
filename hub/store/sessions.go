// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// sessionFile records the leases of this process's election sessions in a
// file (Config.SessionFile), so that the next process on the same data
// directory revokes them at Open: a restarted replica's old election keys
// go at once instead of holding every election for the TTL while nothing
// schedules or dispatches. Without a path it records nothing.
type sessionFile struct {
	path string
	mu   sync.Mutex
	ids  map[clientv3.LeaseID]bool
}

func newSessionFile(path string) *sessionFile {
	return &sessionFile{path: path, ids: map[clientv3.LeaseID]bool{}}
}

// add records a lease of a new session.
func (f *sessionFile) add(id clientv3.LeaseID) error {
	return f.change(func() { f.ids[id] = true })
}

// remove forgets a lease whose session ended.
func (f *sessionFile) remove(id clientv3.LeaseID) error {
	return f.change(func() { delete(f.ids, id) })
}

func (f *sessionFile) change(fn func()) error {
	if f == nil || f.path == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
	lines := make([]string, 0, len(f.ids))
	for id := range f.ids {
		lines = append(lines, strconv.FormatInt(int64(id), 16))
	}
	sort.Strings(lines)
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("store: record election sessions: %w", err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return fmt.Errorf("store: record election sessions: %w", err)
	}
	return nil
}

// revokeStale revokes the leases a previous process recorded in path (a
// lease already gone is fine) and empties the file. It returns how many
// it revoked.
func revokeStale(ctx context.Context, cli *clientv3.Client, path string) (int, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: read election sessions: %w", err)
	}
	n := 0
	for _, line := range strings.Fields(string(raw)) {
		id, err := strconv.ParseInt(line, 16, 64)
		if err != nil {
			continue // not ours to understand: the file is rewritten below
		}
		_, err = cli.Revoke(ctx, clientv3.LeaseID(id))
		if errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("store: revoke the previous process's election session: %w", mapErr(err))
		}
		n++
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, fmt.Errorf("store: %w", err)
	}
	return n, nil
}
