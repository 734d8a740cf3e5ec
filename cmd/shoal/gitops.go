// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// addGitOpsCommands adds `shoal cluster gitops set|clear` (under the cluster
// command, when root has one) and `shoal gitops status`.
func addGitOpsCommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() == "cluster" {
			g := &cobra.Command{Use: "gitops", Short: "Set where a cluster's configuration comes from in Git"}
			g.AddCommand(newClusterGitOpsSetCommand(), newClusterGitOpsClearCommand())
			c.AddCommand(g)
		}
	}
	g := &cobra.Command{Use: "gitops", Short: "Show the clusters' GitOps sync status"}
	g.AddCommand(newGitOpsStatusCommand())
	root.AddCommand(g)
}

// gitopsFlags are the flags of `shoal cluster gitops set`.
type gitopsFlags struct {
	url, branch, tag, commit, path, secret string
	interval, healthTimeout                time.Duration
	prune                                  bool
}

// source builds and checks the source the flags describe.
func (f gitopsFlags) source() (v1alpha1.GitOpsSource, error) {
	src := v1alpha1.GitOpsSource{URL: f.url, Ref: v1alpha1.GitOpsRef{Branch: f.branch, Tag: f.tag, Commit: f.commit}, Path: f.path,
		Interval: sourceDuration(f.interval), SecretRef: f.secret, Prune: f.prune, HealthTimeout: sourceDuration(f.healthTimeout)}
	if err := src.Validate(); err != nil {
		return v1alpha1.GitOpsSource{}, err
	}
	return src, nil
}

// sourceDuration is d for a source field; nil (the default) when zero.
func sourceDuration(d time.Duration) *metav1.Duration {
	if d == 0 {
		return nil
	}
	return &metav1.Duration{Duration: d}
}

func newClusterGitOpsSetCommand() *cobra.Command {
	var f gitopsFlags
	cmd := &cobra.Command{
		Use:   "set CLUSTER --url URL [--branch B | --tag T | --commit SHA] [--path P] [--secret NAME]",
		Short: "Set a cluster's GitOps source (credentials stay in a Secret in the workload cluster)",
		Example: `  shoal cluster gitops set eu1 --url https://git.example.com/fleet.git --branch main \
    --path clusters/eu1 --interval 5m --secret fleet-git --prune`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := f.source()
			if err != nil {
				return err
			}
			return setGitOpsSource(cmd, args[0], &src)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "repository URL (https://, http:// or ssh://), without credentials")
	fl.StringVar(&f.branch, "branch", "", "branch to follow (default main)")
	fl.StringVar(&f.tag, "tag", "", "tag to check out")
	fl.StringVar(&f.commit, "commit", "", "commit SHA to pin")
	fl.StringVar(&f.path, "path", "", "directory to build inside the repository")
	fl.DurationVar(&f.interval, "interval", 0, "time between syncs and drift corrections (default 5m)")
	fl.DurationVar(&f.healthTimeout, "health-timeout", 0, "how long a sync waits for health (default 2m)")
	fl.StringVar(&f.secret, "secret", "", "name of the Secret with the Git credentials in the agent's namespace of the workload cluster")
	fl.BoolVar(&f.prune, "prune", false, "delete objects that left Git")
	_ = cmd.MarkFlagRequired("url")
	cmd.MarkFlagsMutuallyExclusive("tag", "branch")
	cmd.MarkFlagsMutuallyExclusive("tag", "commit")
	return cmd
}

func newClusterGitOpsClearCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "clear CLUSTER",
		Short:             "Remove a cluster's GitOps source (the agent stops syncing; applied objects stay)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeClusterNames,
		RunE:              func(cmd *cobra.Command, args []string) error { return setGitOpsSource(cmd, args[0], nil) },
	}
}

func setGitOpsSource(cmd *cobra.Command, cluster string, src *v1alpha1.GitOpsSource) error {
	var b []byte
	if src != nil {
		var err error
		if b, err = json.Marshal(src); err != nil {
			return err
		}
	}
	conn, err := dialHub(cmd)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if _, err := shoalv1.NewGitOpsClient(conn).SetSource(cmd.Context(), &shoalv1.SetGitOpsSourceRequest{Cluster: cluster, SourceJson: b}); err != nil {
		return outCallError("set gitops source of cluster/"+cluster, err)
	}
	if src == nil {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s gitops source cleared\n", cluster)
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s gitops source set: %s %s path %q\n", cluster, src.URL, src.WithDefaults().Ref, src.Path)
	return err
}

func newGitOpsStatusCommand() *cobra.Command {
	var output, selector string
	cmd := &cobra.Command{
		Use:   "status [-l SELECTOR]",
		Short: "Show every cluster's GitOps source, applied revision, health and last error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			conn, err := dialHub(cmd)
			if err != nil {
				return err
			}
			defer func() { _ = conn.Close() }()
			resp, err := shoalv1.NewGitOpsClient(conn).ListStatus(cmd.Context(), &shoalv1.ListGitOpsStatusRequest{Selector: selector})
			if err != nil {
				return outCallError("gitops status", err)
			}
			var cls []*v1alpha1.Cluster
			for _, o := range resp.Items {
				c, err := decodeCluster(o)
				if err != nil {
					return err
				}
				cls = append(cls, c)
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, outList(cls)); ok {
				return err
			}
			return printGitOpsStatus(cmd.OutOrStdout(), cls, output == "wide", time.Now())
		},
	}
	outFlag(cmd, &output)
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector over the clusters")
	return cmd
}

// printGitOpsStatus writes one row per cluster.
func printGitOpsStatus(w io.Writer, cls []*v1alpha1.Cluster, wide bool, now time.Time) error {
	t := outTable(w)
	head := "CLUSTER\tSOURCE\tAPPLIED\tHEALTH\tPINNED\tLAST ATTEMPT\tERROR"
	if wide {
		head += "\tINVENTORY\tDRIFTED\tURL"
	}
	fmt.Fprintln(t, head)
	for _, c := range cls {
		src, applied, health, pinned, attempt, msg := "-", "-", "-", "-", "-", "-"
		url, inv, drifted := "-", "-", "-"
		if s := c.Spec.GitOps; s != nil {
			src = fmt.Sprintf("%s %s", outDash(s.Path), refString(s.Ref))
			url = s.URL
		}
		if g := c.Status.GitOps; g != nil {
			applied, health, msg = shortSHA(g.AppliedCommit), outDash(string(g.Health)), outDash(g.Message)
			if g.PinnedCommit != "" {
				pinned = shortSHA(g.PinnedCommit) + " (" + g.PinnedBy + ")"
			}
			if g.LastAttemptTime != nil {
				attempt = outAge(*g.LastAttemptTime, now)
			}
			inv, drifted = fmt.Sprint(g.InventorySize), fmt.Sprint(len(g.Drifted))
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", c.Name, src, applied, health, pinned, attempt, msg)
		if wide {
			row += fmt.Sprintf("\t%s\t%s\t%s", inv, drifted, url)
		}
		fmt.Fprintln(t, row)
	}
	return t.Flush()
}

func refString(r v1alpha1.GitOpsRef) string { return r.String() }

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return outDash(s)
}
