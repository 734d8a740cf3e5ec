// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// validCluster accepts names that fit a DNS label inside shoal-agent-<c>.
func validCluster(cluster string) error {
	if errs := validation.IsDNS1123Label(ServiceAccountName(cluster)); cluster == "" || len(errs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalidCluster, cluster, strings.Join(errs, "; "))
	}
	return nil
}

// ErrAmbiguousName means a cluster name that is a dash-prefix of a registered
// one (or the reverse), e.g. "a" and "a-b": the admission policy tells their
// leases and pods apart by node-name prefix only.
var ErrAmbiguousName = errors.New("cluster name is ambiguous with a registered cluster")

// CheckName refuses a new cluster name that would make the agents' node-name
// prefixes overlap with one of the registered names. The registry should call
// it before admitting a registration.
func CheckName(name string, registered []string) error {
	if err := validCluster(name); err != nil {
		return err
	}
	for _, r := range registered {
		if r == name {
			continue
		}
		if strings.HasPrefix(v1alpha1.VirtualNodePrefix(r), v1alpha1.VirtualNodePrefix(name)) || strings.HasPrefix(v1alpha1.VirtualNodePrefix(name), v1alpha1.VirtualNodePrefix(r)) {
			return fmt.Errorf("%w: %q and %q", ErrAmbiguousName, name, r)
		}
	}
	return nil
}
