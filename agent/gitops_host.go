// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent/gitops"
	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// GitOps returns the GitOpsFunc that hosts agent/gitops: every interval, and
// after every sync, it reports the sync status to the hub and applies the
// source the hub answers with (the hub may pin a revision for a rollout).
func GitOps(workDir, namespace string, interval time.Duration) GitOpsFunc {
	return func(ctx context.Context, hub *hubclient.Client, _ kubernetes.Interface, localCfg *rest.Config) error {
		changed := make(chan struct{}, 1)
		s, err := gitops.New(localCfg, gitops.Options{Namespace: namespace, WorkDir: workDir,
			OnStatus: func(v1alpha1.GitOpsStatus) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}})
		if err != nil {
			return err
		}
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return s.Run(ctx) })
		g.Go(func() error { return exchange(ctx, s, hub, changed, interval) })
		return g.Wait()
	}
}

// exchange sends the status and takes the source until ctx ends.
func exchange(ctx context.Context, s *gitops.Syncer, hub *hubclient.Client, changed <-chan struct{}, interval time.Duration) error {
	log := klog.FromContext(ctx).WithName("gitops")
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		st, err := json.Marshal(s.Status())
		if err != nil {
			return err
		}
		callCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		srcJSON, err := hub.ReportGitOpsStatus(callCtx, st)
		cancel()
		if err != nil {
			log.V(2).Info("GitOps status report failed", "err", err)
		} else if len(srcJSON) > 0 {
			var src v1alpha1.GitOpsSource
			if err := json.Unmarshal(srcJSON, &src); err != nil {
				log.Error(err, "Hub sent an unreadable GitOps source")
			} else if cur, ok := s.Source(); !ok || !sameSource(cur, src) {
				if err := s.SetSource(src); err != nil {
					log.Error(err, "Hub sent an invalid GitOps source")
				} else {
					log.Info("GitOps source set by the hub", "url", src.URL, "path", src.Path)
					s.Trigger()
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
	}
}

// sameSource reports whether the hub's source src is the syncer's current
// one, cur (which the syncer keeps with its defaults applied). Without the
// defaults a source stored without an interval never compared equal, so
// every status report restarted a sync.
func sameSource(cur, src v1alpha1.GitOpsSource) bool {
	return reflect.DeepEqual(cur, src.WithDefaults())
}
