// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Load reads a config file. A missing file is an empty config and an error
// wrapping os.ErrNotExist.
func Load(path string) (*ClientConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return &ClientConfig{}, err
	}
	var c ClientConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return &ClientConfig{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return &c, nil
}

// Save writes the config file 0600 (it holds a private key), creating its
// directory; the file is replaced atomically.
func (c *ClientConfig) Save(path string) error {
	data, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
