// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"flag"
	"os"
	"testing"

	"github.com/shoal-dev/shoal/test/hubtest"
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(hubtest.Run(m, "dispatch"))
}

// env is one test's hub: its own store prefix, a fake clock, the jobs service.
type env = hubtest.Env

func newEnv(t *testing.T) *env { return hubtest.New(t) }

// node is an 8-GPU H100 node in a rack with used GPUs.
var node = hubtest.Node
