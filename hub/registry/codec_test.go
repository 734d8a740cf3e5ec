// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/registry"
)

// record is an inventory record whose inventory is about n KB of JSON.
func record(name string, n int) *registry.InventoryRecord {
	inv, _ := json.Marshal(map[string]string{"name": name, "pad": strings.Repeat(name, n*1024/len(name))})
	return &registry.InventoryRecord{Cluster: name, Generation: int64(n), Received: time.Unix(int64(n), 0).UTC(), Inventory: inv}
}

// TestInventoryCodecRoundTrips: records of many sizes, encoded and decoded
// by 8 goroutines at once (the codec's compressors and decompressors are
// shared through pools), decode to what was encoded; a gzipped record
// whose trailer states a wrong size still decodes (the size only reserves
// room), and a truncated one is refused.
func TestInventoryCodecRoundTrips(t *testing.T) {
	codec := registry.InventoryCodec()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 40 {
				want := record(fmt.Sprintf("c%d-%d", w, i), 1+(w*40+i)%97)
				b, err := codec.Marshal(want)
				if err != nil {
					errs <- err
					return
				}
				got, err := codec.Unmarshal(b)
				if err != nil {
					errs <- err
					return
				}
				if got.Cluster != want.Cluster || got.Generation != want.Generation || !got.Received.Equal(want.Received) ||
					!bytes.Equal(got.Inventory, want.Inventory) {
					errs <- fmt.Errorf("record %s decoded as %s (generation %d, %d inventory bytes)", want.Cluster, got.Cluster,
						got.Generation, len(got.Inventory))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	want := record("lies", 50)
	b, err := codec.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []uint32{0, 3, 1 << 31} {
		lying := bytes.Clone(b)
		binary.LittleEndian.PutUint32(lying[len(lying)-4:], size)
		// gzip checks the stated size at the end of the stream: a lie is
		// an error, never a wrong record or a buffer of 2 GiB.
		if got, err := codec.Unmarshal(lying); err == nil && !bytes.Equal(got.Inventory, want.Inventory) {
			t.Fatalf("a trailer stating %d bytes decoded another inventory", size)
		}
	}
	if _, err := codec.Unmarshal(b[:len(b)/2]); err == nil {
		t.Fatal("a truncated gzipped record decoded")
	}
	var plain bytes.Buffer
	zw := gzip.NewWriter(&plain)
	_, _ = zw.Write([]byte(`{"cluster":"plain-gzip","generation":7}`))
	_ = zw.Close()
	if got, err := codec.Unmarshal(plain.Bytes()); err != nil || got.Cluster != "plain-gzip" || got.Generation != 7 {
		t.Fatalf("a record gzipped elsewhere decoded as %+v, %v", got, err)
	}
}
