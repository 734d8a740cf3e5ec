package hubcluster

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// validCluster accepts names that fit a DNS label inside shoal-agent-<c>.
func validCluster(cluster string) error {
	if errs := validation.IsDNS1123Label(ServiceAccountName(cluster)); cluster == "" || len(errs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalidCluster, cluster, strings.Join(errs, "; "))
	}
	return nil
}
