// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

func newWhoAmICommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Print who the hub takes the current identity for: user, how it authenticated, roles",
		Long: "whoami asks the hub: the user name (\"admin\" for the bootstrap admin, \"oidc:USERNAME\" for a token\n" +
			"that only group bindings admit), certificate or oidc, the role bindings, and the certificate's serial\n" +
			"and expiry or the token's OIDC username and groups.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			uc, done, err := usersClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := uc.WhoAmI(cmd.Context(), &shoalv1.WhoAmIRequest{})
			if err != nil {
				return outCallError("whoami", err)
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, resp); ok {
				return err
			}
			var roles []string
			for _, b := range resp.Bindings {
				roles = append(roles, b.Role+outIf(b.Queue != "", "@"+b.Queue))
			}
			w := outTable(cmd.OutOrStdout())
			fmt.Fprintf(w, "User:\t%s\n", resp.User)
			fmt.Fprintf(w, "Authenticated by:\t%s\n", resp.Method)
			fmt.Fprintf(w, "Roles:\t%s\n", outDash(strings.Join(roles, ", ")))
			if resp.Serial != "" {
				fmt.Fprintf(w, "Certificate serial:\t%s\n", resp.Serial)
			}
			if resp.NotAfterUnix != 0 {
				na := time.Unix(resp.NotAfterUnix, 0).UTC()
				fmt.Fprintf(w, "Certificate expires:\t%s (in %s)\n", na.Format(time.RFC3339), time.Until(na).Round(time.Minute))
			}
			if resp.OidcUsername != "" {
				fmt.Fprintf(w, "OIDC username:\t%s\n", resp.OidcUsername)
				fmt.Fprintf(w, "OIDC groups:\t%s\n", outDash(strings.Join(resp.OidcGroups, ", ")))
				fmt.Fprintf(w, "Group bindings:\t%s\n", outDash(strings.Join(resp.GroupRecords, ", ")))
			}
			return w.Flush()
		},
	}
	outFlag(cmd, &output)
	return cmd
}
