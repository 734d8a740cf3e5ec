// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
)

// addressed is member i of job llama with address ip ("": none yet).
func addressed(i int, ip string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "llama-" + strconv.Itoa(i),
		Labels: map[string]string{v1alpha1.LabelMember: strconv.Itoa(i)}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

// TestDeferSlicesWaitsOnlyForAddedMembers: while Lead runs, a starting
// gang's slices are written at most every rendezvousEvery while members
// only gain addresses; member 0's address, the last member's, a moved or
// dropped address and a slice not yet made are written at once.
func TestDeferSlicesWaitsOnlyForAddedMembers(t *testing.T) {
	d := &Dispatcher{}
	_, forget := d.resetWakes() // as Lead does: writes are coalesced
	defer forget()
	t0 := time.Unix(1000, 0)
	j := &v1alpha1.Job{ObjectMeta: metav1.ObjectMeta{Name: "llama"}}
	res := &ledger.Reservation{Members: make([]ledger.Member, 4)}
	const ns = "shoal-c-a"
	slicesOf := func(pods ...*corev1.Pod) map[types.NamespacedName]*discoveryv1.EndpointSlice {
		out := map[types.NamespacedName]*discoveryv1.EndpointSlice{}
		for _, s := range endpointSlices(j, ns, pods) {
			out[types.NamespacedName{Namespace: ns, Name: s.Name}] = s
		}
		return out
	}
	wantOf := func(pods ...*corev1.Pod) map[string][]*discoveryv1.EndpointSlice {
		return map[string][]*discoveryv1.EndpointSlice{ns: endpointSlices(j, ns, pods)}
	}
	m0, m1, m2, m3 := addressed(0, "10.0.0.1"), addressed(1, "10.0.0.2"), addressed(2, "10.0.0.3"), addressed(3, "10.0.0.4")
	d.sliceWrites.Store("llama", t0)
	for name, tc := range map[string]struct {
		have  map[types.NamespacedName]*discoveryv1.EndpointSlice
		want  map[string][]*discoveryv1.EndpointSlice
		after time.Duration
		wait  bool
	}{
		"a member added within the interval waits": {have: slicesOf(m0), want: wantOf(m0, m1), after: 100 * time.Millisecond, wait: true},
		"two added, two missing, waits":            {have: slicesOf(m0), want: wantOf(m0, m1, m2), after: 100 * time.Millisecond, wait: true},
		"the interval over: written":               {have: slicesOf(m0), want: wantOf(m0, m1), after: rendezvousEvery},
		"member 0 is written at once":              {have: slicesOf(m1), want: wantOf(m0, m1), after: 100 * time.Millisecond},
		"the last member is written at once":       {have: slicesOf(m0, m1, m2), want: wantOf(m0, m1, m2, m3), after: 100 * time.Millisecond},
		"a dropped member is written at once":      {have: slicesOf(m0, m1), want: wantOf(m0), after: 100 * time.Millisecond},
		"a moved address is written at once": {have: slicesOf(m0, m1), want: wantOf(m0, addressed(1, "10.0.0.9"), m2),
			after: 100 * time.Millisecond},
		"a slice not made yet is made at once": {have: nil, want: wantOf(m0, m1), after: 100 * time.Millisecond},
		"nothing changed: nothing waits":       {have: slicesOf(m0, m1), want: wantOf(m0, m1), after: 100 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scope{name: "llama", res: res, now: t0.Add(tc.after)}
			if got := d.deferSlices(s, tc.have, tc.want); got != tc.wait {
				t.Fatalf("deferred %v, want %v", got, tc.wait)
			}
			if tc.wait && !s.wake.Equal(t0.Add(rendezvousEvery)) {
				t.Fatalf("wake %v, want the end of the interval %v", s.wake, t0.Add(rendezvousEvery))
			}
		})
	}
	t.Run("never written by Lead: at once", func(t *testing.T) {
		s := &scope{name: "other", res: res, now: t0}
		if d.deferSlices(s, slicesOf(m0), wantOf(m0, m1)) {
			t.Fatal("deferred")
		}
	})
	t.Run("driven by hand (Pass): at once", func(t *testing.T) {
		forget()
		s := &scope{name: "llama", res: res, now: t0.Add(100 * time.Millisecond)}
		if d.deferSlices(s, slicesOf(m0), wantOf(m0, m1)) {
			t.Fatal("deferred")
		}
	})
}
