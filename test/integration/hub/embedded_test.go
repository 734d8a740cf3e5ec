// SPDX-License-Identifier: Apache-2.0

package hub

import "testing"

// TestEmbeddedEtcd runs the hub on its embedded etcd.
func TestEmbeddedEtcd(t *testing.T) {
	h := startHub(t)
	t.Run("transport security", func(t *testing.T) { testTransportSecurity(t, h) })
	var a *agent
	t.Run("registration", func(t *testing.T) { a = testRegistration(t, h, "") })
	if a == nil {
		t.FailNow()
	}
	a.redial(t, h)
	t.Run("concurrent registrations", func(t *testing.T) { testConcurrentRegistrations(t, h, "") })
	t.Run("remove revokes", func(t *testing.T) { testRemoveRevokes(t, h, "") })
	t.Run("liveness", func(t *testing.T) { testLiveness(t, h, "") })
	t.Run("metrics and CLI", func(t *testing.T) { testMetricsAndCLI(t, h) })
	t.Run("restart keeps state", func(t *testing.T) { testRestartKeepsState(t, h, a) })
}
