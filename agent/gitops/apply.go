// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// FieldManager is the server-side apply field manager of every object Shoal
// applies from Git.
const FieldManager = "shoal"

// OwnerGroup prefixes the owner labels put on applied objects:
// gitops.shoal.dev/name and gitops.shoal.dev/namespace. Prune deletes only
// objects that still carry them.
const OwnerGroup = "gitops.shoal.dev"

// applier validates, applies, prunes and health-checks one object set.
type applier struct {
	rm              *ssa.ResourceManager
	owner, ownerNS  string // values of the owner labels
	pollInterval    time.Duration
	validateWorkers int
}

func (a *applier) label(objs []*unstructured.Unstructured) {
	a.rm.SetOwnerLabels(objs, a.owner, a.ownerNS)
}

// apply applies objs in stages (CRDs and Namespaces first) and returns the
// change set. Objects equal to the cluster's are not written.
func (a *applier) apply(ctx context.Context, objs []*unstructured.Unstructured, timeout time.Duration) (*ssa.ChangeSet, error) {
	opts := ssa.DefaultApplyOptions()
	opts.WaitInterval = a.pollInterval
	opts.WaitTimeout = timeout
	cs, err := a.rm.ApplyAllStaged(ctx, objs, opts)
	if err != nil {
		return cs, syncErr(v1alpha1.GitOpsReasonApplyFailed, "apply: %w", err)
	}
	return cs, nil
}

// prune deletes stale objects that still carry Shoal's owner labels and do
// not opt out with v1alpha1.AnnotationPrune. It returns what it deleted.
func (a *applier) prune(ctx context.Context, stale []*unstructured.Unstructured) ([]ObjectRef, error) {
	if len(stale) == 0 {
		return nil, nil
	}
	cs, err := a.rm.DeleteAll(ctx, stale, ssa.DeleteOptions{
		PropagationPolicy: metav1.DeletePropagationBackground,
		Inclusions:        a.rm.GetOwnerLabels(a.owner, a.ownerNS),
		Exclusions:        map[string]string{v1alpha1.AnnotationPrune: "disabled"},
	})
	var deleted []ObjectRef
	if cs != nil {
		for _, e := range cs.Entries {
			if e.Action == ssa.DeletedAction {
				deleted = append(deleted, refOf(e.ObjMetadata))
			}
		}
	}
	if err != nil {
		return deleted, syncErr(v1alpha1.GitOpsReasonPruneFailed, "prune: %w", err)
	}
	return deleted, nil
}

// wait blocks until every object of set is Current (kstatus) or timeout.
func (a *applier) wait(ctx context.Context, set object.ObjMetadataSet, timeout time.Duration) error {
	err := a.rm.WaitForSetWithContext(ctx, set, ssa.WaitOptions{Interval: a.pollInterval, Timeout: timeout, FailFast: true})
	if err == nil || ctx.Err() != nil {
		return err
	}
	// The poller's error can be about the poll itself (a request cut by the
	// deadline); say which objects are not ready instead when we can.
	if summary := a.notReady(ctx, set); summary != nil {
		err = summary
	}
	return syncErr(v1alpha1.GitOpsReasonHealthCheckFailed, "health check failed after %s: %w", timeout, err)
}

// notReady computes the kstatus of every object in set once and describes
// those that are not Current; nil when all are (or none can be read).
func (a *applier) notReady(ctx context.Context, set object.ObjMetadataSet) error {
	var errs []error
	for _, id := range set {
		u := &unstructured.Unstructured{}
		mapping, err := a.rm.Client().RESTMapper().RESTMapping(id.GroupKind)
		if err != nil {
			continue
		}
		u.SetGroupVersionKind(mapping.GroupVersionKind)
		if err := a.rm.Client().Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, u); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ssautils.FmtObjMetadata(id), err))
			continue
		}
		res, err := status.Compute(u)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ssautils.FmtObjMetadata(id), err))
		} else if res.Status != status.CurrentStatus {
			errs = append(errs, fmt.Errorf("%s is %s: %s", ssautils.FmtObjMetadata(id), res.Status, res.Message))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return joinFirst(errs, 5)
}

// drifted returns the objects a sync at an unchanged revision had to write:
// someone changed or deleted them in the cluster.
func drifted(cs *ssa.ChangeSet) []ObjectRef {
	var out []ObjectRef
	if cs == nil {
		return nil
	}
	for _, e := range cs.Entries {
		if e.Action == ssa.ConfiguredAction || e.Action == ssa.CreatedAction {
			out = append(out, refOf(e.ObjMetadata))
		}
	}
	return out
}

// joinFirst joins up to n errors and says how many more there were.
func joinFirst(errs []error, n int) error {
	if len(errs) <= n {
		return errors.Join(errs...)
	}
	return errors.Join(append(errs[:n:n], fmt.Errorf("and %d more", len(errs)-n))...)
}
