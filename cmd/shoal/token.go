// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
)

// bearerToken sends an OIDC ID token as "authorization: Bearer …" on every
// call, read from its file at each call (a refreshed token is picked up) or
// from $SHOAL_TOKEN. The token is never taken from the command line nor
// printed.
type bearerToken struct {
	// file holds the token; "" means value.
	file, value string
}

// selectToken is the token the CLI authenticates with: --token-file, else
// $SHOAL_TOKEN, else the context's tokenFile; nil when there is none.
func selectToken(hctx *configv1alpha1.Context) *bearerToken {
	switch {
	case globalHubFlags.tokenFile != "":
		return &bearerToken{file: globalHubFlags.tokenFile}
	case os.Getenv(configv1alpha1.TokenEnv) != "":
		return &bearerToken{value: os.Getenv(configv1alpha1.TokenEnv)}
	case hctx.TokenFile != "":
		return &bearerToken{file: hctx.TokenFile}
	}
	return nil
}

// GetRequestMetadata returns the authorization header.
func (b *bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	tok := b.value
	if b.file != "" {
		raw, err := os.ReadFile(b.file)
		if err != nil {
			return nil, fmt.Errorf("read the ID token: %w", err)
		}
		tok = string(raw)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		src := "$" + configv1alpha1.TokenEnv
		if b.file != "" {
			src = b.file
		}
		return nil, fmt.Errorf("the ID token in %s is empty", src)
	}
	return map[string]string{"authorization": "Bearer " + tok}, nil
}

// RequireTransportSecurity is true: the token goes over TLS only.
func (b *bearerToken) RequireTransportSecurity() bool { return true }
