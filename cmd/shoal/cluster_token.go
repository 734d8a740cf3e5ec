// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func newClusterTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke join tokens for registering workload clusters",
	}
	cmd.AddCommand(newTokenCreateCommand(), newTokenListCommand(), newTokenRevokeCommand())
	return cmd
}

func newTokenCreateCommand() *cobra.Command {
	var (
		ttl         time.Duration
		usages      int32
		description string
		clusterName string
		output      string
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a join token and print the shoal-agent command that registers a cluster with it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			if ttl <= 0 || usages < 1 {
				return fmt.Errorf("--ttl must be positive and --usages at least 1 (got %s, %d)", ttl, usages)
			}
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			resp, err := cl.CreateJoinToken(cmd.Context(), &shoalv1.CreateJoinTokenRequest{
				TtlSeconds: int64(ttl.Seconds()), Usages: usages, Description: description,
			})
			if err != nil {
				return err
			}
			if clusterName != "" {
				resp.AgentCommand = strings.Replace(resp.AgentCommand, "--cluster-name NAME", "--cluster-name "+clusterName, 1)
			}
			var tok v1alpha1.JoinToken
			_ = json.Unmarshal(resp.GetJoinToken().GetJson(), &tok)
			structured := map[string]any{"token": resp.Token, "caHash": resp.CaHash, "agentCommand": resp.AgentCommand, "joinToken": tok}
			if ok, err := outStructured(cmd.OutOrStdout(), output, structured); ok {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Token:    %s\nCA hash:  %s\nExpires:  %s (in %s)\nUsages:   %d\n\n",
				resp.Token, resp.CaHash, tok.Spec.Expires.UTC().Format(time.RFC3339), ttl, usages)
			where := "Run the agent in each workload cluster, with that cluster's name"
			if clusterName != "" {
				where = "Run the agent in workload cluster " + clusterName
			}
			fmt.Fprintf(w, "%s:\n\n  %s\n\nThe token is shown only once.\n", where, resp.AgentCommand)
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the token is valid")
	cmd.Flags().Int32Var(&usages, "usages", 1, "how many clusters may register with the token")
	cmd.Flags().StringVar(&description, "description", "", "what the token is for")
	cmd.Flags().StringVar(&clusterName, "cluster-name", "", "fill in the cluster name of the printed agent command")
	outFlag(cmd, &output)
	return cmd
}

func newTokenListCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List join tokens (their secrets are never shown again)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			resp, err := cl.ListJoinTokens(cmd.Context(), &shoalv1.ListJoinTokensRequest{})
			if err != nil {
				return err
			}
			toks := make([]v1alpha1.JoinToken, len(resp.Items))
			for i, o := range resp.Items {
				if err := json.Unmarshal(o.Json, &toks[i]); err != nil {
					return fmt.Errorf("hub sent a join token this CLI cannot read: %w", err)
				}
				toks[i].Spec.SecretHash = ""
			}
			list := map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": "JoinTokenList", "items": toks}
			if ok, err := outStructured(cmd.OutOrStdout(), output, list); ok {
				return err
			}
			return printTokens(cmd.OutOrStdout(), toks, time.Now())
		},
	}
	outFlag(cmd, &output)
	return cmd
}

// tokenState is valid, expired, revoked or used-up.
func tokenState(t *v1alpha1.JoinToken, now time.Time) string {
	switch {
	case t.Status.Revoked:
		return "revoked"
	case !now.Before(t.Spec.Expires.Time):
		return "expired"
	case t.Spec.MaxUses > 0 && t.Status.Uses >= t.Spec.MaxUses:
		return "used-up"
	}
	return "valid"
}

func printTokens(w io.Writer, toks []v1alpha1.JoinToken, now time.Time) error {
	if len(toks) == 0 {
		_, err := fmt.Fprintln(w, "No join tokens. Create one with `shoal cluster token create`.")
		return err
	}
	tw := outTable(w)
	fmt.Fprintln(tw, "ID\tSTATE\tUSES\tEXPIRES\tCLUSTERS\tDESCRIPTION")
	for i := range toks {
		t := &toks[i]
		maxUses := "∞"
		if t.Spec.MaxUses > 0 {
			maxUses = fmt.Sprint(t.Spec.MaxUses)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%s\t%s\t%s\t%s\n", t.Name, tokenState(t, now), t.Status.Uses, maxUses,
			t.Spec.Expires.UTC().Format(time.RFC3339), outDash(strings.Join(t.Status.Clusters, ",")), outDash(t.Spec.Description))
	}
	return tw.Flush()
}

func newTokenRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a join token (by its ID, the part before the dot); clusters already registered stay",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, closeConn, err := clustersClient(cmd)
			if err != nil {
				return err
			}
			defer closeConn()
			if _, err := cl.RevokeJoinToken(cmd.Context(), &shoalv1.RevokeJoinTokenRequest{Id: args[0]}); err != nil {
				return err
			}
			id, _, _ := strings.Cut(args[0], ".")
			fmt.Fprintf(cmd.OutOrStdout(), "join token %s revoked\n", id)
			return nil
		},
	}
}
