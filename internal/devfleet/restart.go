// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"os"
	"time"
)

// Replace stops c's newest process called name (SIGTERM, then SIGKILL after
// grace) and starts bin in its place with the same arguments (the old log is
// kept as <log>.<old pid>):
// one component upgraded (or downgraded) in place, as an operator replaces
// one replica at a time. It returns the new process.
func (f *Fleet) Replace(c *Cluster, name, bin string, grace time.Duration) (*Process, error) {
	old := f.process(c, name)
	if old == nil {
		return nil, fmt.Errorf("cluster %s runs no %s", c.Name, name)
	}
	if err := old.Stop(grace); err != nil {
		return nil, err
	}
	// The replaced process's log stays, next to the new one.
	if err := os.Rename(old.Log, fmt.Sprintf("%s.%d", old.Log, old.Pid)); err != nil {
		return nil, err
	}
	p, err := f.add(c, name, bin, old.Args)
	if err != nil {
		return nil, err
	}
	f.progress("cluster %s: %s replaced by %s (pid %d)", c.Name, name, bin, p.Pid)
	return p, nil
}
