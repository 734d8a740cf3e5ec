// SPDX-License-Identifier: Apache-2.0

package rendezvous

import (
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestEnvNamesAreTheContract: the program keeps its own copies of the
// variable names (importing apis/v1alpha1 would link the Kubernetes API
// types into a one-binary image); they must be the names the hub sets.
func TestEnvNamesAreTheContract(t *testing.T) {
	for mine, theirs := range map[string]string{
		EnvMasterAddr: v1alpha1.EnvMasterAddr, EnvMasterPort: v1alpha1.EnvMasterPort,
		EnvWorldSize: v1alpha1.EnvWorldSize, EnvRank: v1alpha1.EnvRank, EnvNodeRank: v1alpha1.EnvNodeRank,
		EnvLocalWorldSize: v1alpha1.EnvLocalWorldSize, EnvPetMasterAddr: v1alpha1.EnvPETMasterAddr,
		EnvPetMasterPort: v1alpha1.EnvPETMasterPort, EnvPetNodeRank: v1alpha1.EnvPETNodeRank,
		EnvPetNNodes: v1alpha1.EnvPETNNodes, EnvPetNProcPerNode: v1alpha1.EnvPETNProcPerNode,
		EnvJob: v1alpha1.EnvJob, EnvEpoch: v1alpha1.EnvEpoch, EnvMemberIndex: v1alpha1.EnvMemberIndex,
		EnvRole: v1alpha1.EnvRole,
	} {
		if mine != theirs {
			t.Errorf("the program reads %q where the hub sets %q", mine, theirs)
		}
	}
}
