// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"sync"
)

// Keeper holds the agent's current credentials and writes every change of
// them to the credentials Secret, one whole Secret per change, so that a
// renewed certificate and key replace the old pair together and a
// refreshed hub kubeconfig never writes back an old certificate. It is
// safe for concurrent use.
type Keeper struct {
	store SecretStore
	mu    sync.Mutex
	cur   Credentials
}

// NewKeeper returns a Keeper of creds, as loaded from (or saved to) store.
func NewKeeper(store SecretStore, creds *Credentials) *Keeper {
	return &Keeper{store: store, cur: *creds}
}

// Current returns a copy of the current credentials.
func (k *Keeper) Current() *Credentials {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.cur
	return &c
}

// Update applies change to a copy of the current credentials, saves the
// result and makes it current; on a failed save nothing changes.
func (k *Keeper) Update(ctx context.Context, change func(*Credentials)) (*Credentials, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	next := k.cur
	change(&next)
	if err := k.store.Save(ctx, &next); err != nil {
		return nil, err
	}
	k.cur = next
	c := next
	return &c, nil
}
