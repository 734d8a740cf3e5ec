// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"slices"
	"strings"
	"testing"
)

func TestHubRunsNodeLifecycle(t *testing.T) {
	hub, work := &Cluster{Role: RoleHub}, &Cluster{Role: RoleWorkload}
	shoal := &ShoalOptions{}
	for _, tc := range []struct {
		name string
		c    *Cluster
		o    Options
		want bool
	}{
		{"hub with shoal", hub, Options{Shoal: shoal}, true},
		{"hub with shoal and full kcm", hub, Options{Shoal: shoal, ControllerManager: true}, true},
		{"hub without shoal", hub, Options{}, false},
		{"workload with shoal", work, Options{Shoal: shoal}, false},
		{"no hub", hub, Options{Shoal: shoal, NoHub: true}, false},
	} {
		if got := hubRunsNodeLifecycle(tc.c, tc.o); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHubControllerManagerArgs(t *testing.T) {
	c := &Cluster{Role: RoleHub, Kubeconfig: "/k", Dir: "/d", Ports: Ports{ControllerManager: 1234}}
	grace := "--node-monitor-grace-period=" + HubNodeMonitorGrace.String()
	for _, tc := range []struct {
		name        string
		full        bool
		controllers string
		keepsKeys   bool
	}{
		{"lean", false, "--controllers=node-lifecycle-controller", false},
		{"full", true, "--controllers=*,-taint-eviction-controller", true},
	} {
		args := hubControllerManagerArgs(c, "/pki", tc.full)
		n := 0
		for _, a := range args {
			if strings.HasPrefix(a, "--controllers=") {
				n++
				if a != tc.controllers {
					t.Errorf("%s: %s, want %s", tc.name, a, tc.controllers)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d --controllers flags, want 1: %v", tc.name, n, args)
		}
		if !slices.Contains(args, grace) || !slices.Contains(args, "--secure-port=1234") {
			t.Errorf("%s: no %s or health port: %v", tc.name, grace, args)
		}
		hasKey := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--service-account-private-key-file=") })
		if hasKey != tc.keepsKeys {
			t.Errorf("%s: service-account key flag present %v, want %v", tc.name, hasKey, tc.keepsKeys)
		}
	}
}
