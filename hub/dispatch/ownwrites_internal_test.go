// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOwnWritesStandInUntilTheCacheHasThem(t *testing.T) {
	pod := func(name, rv, commit string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv,
			Annotations: map[string]string{"commit": commit}}}
	}
	var w ownWrites
	w.wrote("j", pod("j-1-0", "10", ""))  // created, not cached yet
	w.wrote("j", pod("j-1-2", "12", "1")) // stamped, cached before the stamp
	cached := []*corev1.Pod{pod("j-1-1", "7", ""), pod("j-1-2", "8", "")}
	got := w.over("j", cached, "9")
	names := func(ps []*corev1.Pod) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name+"@"+p.ResourceVersion)
		}
		return out
	}
	if want := "[j-1-0@10 j-1-1@7 j-1-2@12]"; fmt.Sprint(names(got)) != want {
		t.Fatalf("watch at 9: %v, want %s", names(got), want)
	}
	if cached[1].ResourceVersion != "8" {
		t.Error("the cache's pods were changed")
	}
	// The watch passed the create, not the stamp: only the stamp stands in.
	got = w.over("j", []*corev1.Pod{pod("j-1-0", "10", ""), pod("j-1-1", "7", ""), pod("j-1-2", "8", "")}, "11")
	if want := "[j-1-0@10 j-1-1@7 j-1-2@12]"; fmt.Sprint(names(got)) != want {
		t.Fatalf("watch at 11: %v, want %s", names(got), want)
	}
	// Past both: the cache is authoritative, also for a member deleted since.
	got = w.over("j", []*corev1.Pod{pod("j-1-1", "7", "")}, "13")
	if want := "[j-1-1@7]"; fmt.Sprint(names(got)) != want {
		t.Fatalf("watch at 13: %v, want %s", names(got), want)
	}
	if len(w.pods) != 0 {
		t.Errorf("writes the cache has kept: %v", w.pods)
	}
}
