// SPDX-License-Identifier: Apache-2.0

package pki

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shoal-dev/shoal/hub/store"
)

// KindPKI is the store kind of the hub PKI shared by the replicas.
const KindPKI = "pki"

// sharedName is the one record of KindPKI.
const sharedName = "hub"

// sharedVersion is the schema version of the record.
const sharedVersion = 1

// sharedFiles are the files of a PKI directory the store holds: the CA,
// a rotation's previous CA and overlap record, and the bootstrap admin
// identity (one for every replica, so that `shoal user revoke admin`
// revokes the admin certificate whichever replica serves it).
var sharedFiles = []string{caCertFile, caKeyFile, previousCertFile, previousKeyFile, rotationFile, adminCertFile, adminKeyFile}

// sharedRecord is the PKI directory as stored: each file sealed with the
// key of Shared (sealed.go), so that etcd, its backups and its snapshots
// never hold a private key in the clear.
type sharedRecord struct {
	// Version is the record's schema version.
	Version int `json:"version"`
	// Files maps a file name to its sealed content.
	Files map[string][]byte `json:"files"`
}

// ErrSharedWithoutKey is returned by CheckUnshared when the store holds a
// shared CA but this replica was given no key to open it.
var ErrSharedWithoutKey = errors.New("pki: the store holds the hub CA shared by the replicas, but no encryption key was given")

// Shared keeps a PKI directory and the store's copy of it in step, so
// that every hub replica on one store has the same CA and bootstrap admin
// identity: the first replica creates the CA and stores it, the others load
// it, and nobody copies pki/ by hand.
type Shared struct {
	dir   string
	coll  *store.Collection[*sharedRecord]
	sealr *sealer
}

// NewShared mirrors the PKI directory dir in st, sealed with key (32
// bytes, AES-256-GCM; LoadKeyFile).
func NewShared(st *store.Store, dir string, key []byte) (*Shared, error) {
	s, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	return &Shared{dir: dir, coll: store.NewCollection[*sharedRecord](st, KindPKI, store.JSONCodec[*sharedRecord]()), sealr: s}, nil
}

// CheckUnshared returns ErrSharedWithoutKey when st holds a shared PKI: a
// replica started without the key must not create a CA of its own beside it.
func CheckUnshared(ctx context.Context, st *store.Store) error {
	coll := store.NewCollection[*sharedRecord](st, KindPKI, store.JSONCodec[*sharedRecord]())
	_, _, err := coll.Get(ctx, sharedName)
	switch {
	case err == nil:
		return ErrSharedWithoutKey
	case errors.Is(err, store.ErrNotFound):
		return nil
	default:
		return fmt.Errorf("pki: read the shared CA: %w", err)
	}
}

// Do brings the directory up to the store's copy (a directory of a hub
// that ran alone keeps its CA when the store holds none yet: that CA
// becomes the shared one), runs fn on the directory (load or create the
// CA, rotate it, reissue the admin identity) and stores what fn changed,
// guarded by the revision it started from. When another replica stored a
// change meanwhile, Do starts again from that one; fn must therefore be
// safe to repeat.
func (s *Shared) Do(ctx context.Context, fn func(dir string) error) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("pki: create %s: %w", s.dir, err)
	}
	for range 5 {
		rec, rev, err := s.pull(ctx)
		if err != nil {
			return err
		}
		if err := fn(s.dir); err != nil {
			return err
		}
		next, err := s.read()
		if err != nil {
			return err
		}
		if rev != 0 && sameFiles(rec, next) {
			return nil
		}
		err = s.push(ctx, next, rev)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return errors.New("pki: the shared CA kept changing under this replica; try again")
}

// pull writes the stored files into the directory (removing those the
// record lacks) and returns them, opened, with the record's revision; with
// no record it leaves the directory alone and returns revision 0.
func (s *Shared) pull(ctx context.Context) (map[string][]byte, int64, error) {
	rec, rev, err := s.coll.Get(ctx, sharedName)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("pki: read the shared CA: %w", err)
	}
	files := map[string][]byte{}
	for name, sealed := range rec.Files {
		data, err := s.sealr.open(name, sealed)
		if err != nil {
			return nil, 0, err
		}
		files[name] = data
	}
	for _, name := range sharedFiles {
		path := filepath.Join(s.dir, name)
		data, ok := files[name]
		if !ok {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, 0, fmt.Errorf("pki: %w", err)
			}
			continue
		}
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
			continue
		}
		if err := writeFile(path, data, fileMode(name)); err != nil {
			return nil, 0, err
		}
	}
	return files, rev, nil
}

// read returns the shared files the directory holds.
func (s *Shared) read() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range sharedFiles {
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		files[name] = data
	}
	return files, nil
}

// push stores files, sealed, if the record is still at rev (0: absent).
func (s *Shared) push(ctx context.Context, files map[string][]byte, rev int64) error {
	rec := &sharedRecord{Version: sharedVersion, Files: map[string][]byte{}}
	for name, data := range files {
		sealed, err := s.sealr.seal(name, data)
		if err != nil {
			return err
		}
		rec.Files[name] = sealed
	}
	var err error
	if rev == 0 {
		_, err = s.coll.Create(ctx, sharedName, rec)
		if errors.Is(err, store.ErrAlreadyExists) {
			err = store.ErrConflict
		}
	} else {
		_, err = s.coll.Update(ctx, sharedName, rec, rev)
	}
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("pki: store the shared CA: %w", err)
	}
	return err
}

// sameFiles reports whether a and b hold the same files.
func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for name, data := range a {
		if other, ok := b[name]; !ok || !bytes.Equal(data, other) {
			return false
		}
	}
	return true
}

// fileMode is the mode a PKI file is written with: keys 0600.
func fileMode(name string) os.FileMode {
	switch name {
	case caKeyFile, previousKeyFile, adminKeyFile:
		return 0o600
	}
	return 0o644
}
