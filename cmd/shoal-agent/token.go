// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// tokenOptions are the sources of the join token: a file, the
// environment, or (deprecated) the command line, where any local user
// reads it in the process table.
type tokenOptions struct {
	flag, file string
}

func (o *tokenOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.file, "token-file", "", "file holding the join token (first registration only; then the credentials Secret is used); or set $"+v1alpha1.EnvJoinToken)
	fs.StringVar(&o.flag, "token", "", "join token on the command line (deprecated: visible to every local user; use --token-file or $"+v1alpha1.EnvJoinToken+")")
	_ = fs.MarkDeprecated("token", "the token is visible in the process table; use --token-file or $"+v1alpha1.EnvJoinToken)
}

// ErrTokenSources is the error of a join token given in more than one way.
var ErrTokenSources = errors.New("give the join token once: --token-file, $" + v1alpha1.EnvJoinToken + " or the deprecated --token")

// token returns the join token from its one source, "" when none is set
// or the token file does not exist (a registered agent's join Secret may
// be gone). It unsets $SHOAL_JOIN_TOKEN so that child processes (git) do
// not inherit it.
func (o *tokenOptions) token(log klog.Logger) (string, error) {
	env, fromEnv := os.LookupEnv(v1alpha1.EnvJoinToken)
	_ = os.Unsetenv(v1alpha1.EnvJoinToken)
	n := 0
	for _, set := range []bool{o.file != "", fromEnv && env != "", o.flag != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return "", ErrTokenSources
	}
	switch {
	case o.flag != "":
		log.Info("WARNING: --token is deprecated: the join token is visible in the process table; use --token-file or $" + v1alpha1.EnvJoinToken)
		return o.flag, nil
	case env != "":
		return strings.TrimSpace(env), nil
	case o.file != "":
		b, err := os.ReadFile(o.file)
		if errors.Is(err, fs.ErrNotExist) {
			log.Info("Join token file absent; the agent registers only with stored credentials", "tokenFile", o.file)
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}
