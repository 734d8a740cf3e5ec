// SPDX-License-Identifier: Apache-2.0

package hubkube

import (
	"net/http"

	"k8s.io/client-go/rest"
)

func restHTTPClient(c *Client) (*http.Client, error) { return rest.HTTPClientFor(c.Config()) }
