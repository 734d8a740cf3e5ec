// SPDX-License-Identifier: Apache-2.0

package main

import (
	"net/http"

	"github.com/spf13/pflag"

	"github.com/shoal-dev/shoal/hub/app"
	"github.com/shoal-dev/shoal/hub/webui"
)

// addWebUIFlag adds --web-ui.
func addWebUIFlag(fs *pflag.FlagSet, on *bool) {
	fs.BoolVar(on, "web-ui", true, "serve the read-only web fleet view at /ui/ on --rest-listen, to the callers the API accepts (docs/webui.md)")
}

// mountWebUI adds the fleet view to the REST listener's handlers when that
// listener is on.
func mountWebUI(c *app.Config, on bool) {
	if !on || c.RESTListen == "" {
		return
	}
	if c.RESTHandlers == nil {
		c.RESTHandlers = map[string]http.Handler{}
	}
	c.RESTHandlers[webui.Prefix] = webui.Handler(nil)
}
