// SPDX-License-Identifier: Apache-2.0

package main

import (
	"path/filepath"
	"strings"
	"testing"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
)

func TestCurrentContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	cfg := &configv1alpha1.ClientConfig{}
	cfg.SetContext(configv1alpha1.Context{Name: "prod", Hub: "hub.prod:7443"})
	cfg.SetContext(configv1alpha1.Context{Name: "dev", Hub: "127.0.0.1:7443"})
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { globalHubFlags = hubFlags{} })
	tests := []struct {
		flags   hubFlags
		wantHub string
		wantErr string
	}{
		{hubFlags{config: path}, "hub.prod:7443", ""},
		{hubFlags{config: path, context: "dev"}, "127.0.0.1:7443", ""},
		{hubFlags{config: path, context: "dev", hub: "10.0.0.1:7443"}, "10.0.0.1:7443", ""},
		{hubFlags{config: path, context: "nope"}, "", `no context "nope"`},
		{hubFlags{config: path + ".missing"}, "", "shoal-hub writes one"},
	}
	for _, tt := range tests {
		globalHubFlags = tt.flags
		c, err := currentContext()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%+v: error %v, want it to mention %q", tt.flags, err, tt.wantErr)
			}
			continue
		}
		if err != nil || c.Hub != tt.wantHub {
			t.Errorf("%+v: hub %v, %v; want %s", tt.flags, c, err, tt.wantHub)
		}
	}
}
