// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// addUserCommands adds `shoal user` and `shoal auth` to root.
func addUserCommands(root *cobra.Command) {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the hub's users: identities issued by the hub CA with roles on queue subtrees (admin only)",
	}
	cmd.AddCommand(newUserCreateCommand(), newUserListCommand(), newUserRevokeCommand(),
		newUserCSRCommand(), newUserRenewCommand())
	auth := &cobra.Command{Use: "auth", Short: "Inspect who the current identity is and what it may do"}
	auth.AddCommand(newCanICommand(), newWhoAmICommand())
	root.AddCommand(cmd, auth)
}

// usersClient dials the hub and returns a Users client and the connection's closer.
func usersClient(cmd *cobra.Command) (shoalv1.UsersClient, func(), error) {
	conn, err := dialHub(cmd)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewUsersClient(conn), func() { _ = conn.Close() }, nil
}

// userBindings pairs the i-th --role with the i-th --queue; without any
// --queue every role gets none (only admin is valid so).
func userBindings(roles, queues []string) ([]*shoalv1.RoleBinding, error) {
	if len(roles) == 0 {
		return nil, errors.New("give at least one --role (admin, queue-admin, submitter, viewer)")
	}
	if len(queues) != 0 && len(queues) != len(roles) {
		return nil, fmt.Errorf("%d --role but %d --queue: give one --queue per --role (none for admin alone)", len(roles), len(queues))
	}
	out := make([]*shoalv1.RoleBinding, len(roles))
	for i, r := range roles {
		out[i] = &shoalv1.RoleBinding{Role: r}
		if len(queues) > 0 {
			out[i].Queue = queues[i]
		}
	}
	return out, nil
}

// userCreateFlags are `shoal user create`'s flags beyond the bindings.
type userCreateFlags struct {
	out, csr, keyFile, oidcUsername, oidcGroup, oidcTokenFile string
	validity                                                  time.Duration
}

func newUserCreateCommand() *cobra.Command {
	var roles, queues []string
	var f userCreateFlags
	cmd := &cobra.Command{
		Use:   "create NAME --role ROLE [--queue SUBTREE] ... [--csr FILE | --oidc-username NAME | --oidc-group GROUP] [--out FILE]",
		Short: "Create a user (a client certificate, an OIDC identity, or both) and write a shoal config for it",
		Long: "create stores user NAME with its role bindings (the i-th --role applies to the i-th --queue subtree)\n" +
			"and writes a shoal config with one context NAME for it: into --out (merged into an existing file),\n" +
			"or to stdout. Its credentials are one of:\n" +
			"  (default)        a certificate for a key the hub makes: the config holds the private key, hand it over like a password;\n" +
			"  --csr FILE       a certificate for the user's own key (`shoal user csr` on the user's machine): the config\n" +
			"                   names the key by --key-file and holds no secret;\n" +
			"  --oidc-username  the OIDC identity of that username (the hub's --oidc-username-claim) acts as the user; no\n" +
			"                   certificate unless --csr too; the config reads the ID token from --oidc-token-file, or use\n" +
			"                   --token-file or $SHOAL_TOKEN;\n" +
			"  --oidc-group     a group binding: every OIDC token of that group (--oidc-groups-claim) gets these roles; no config.",
		Example: "  shoal user create alice --role submitter --queue research/nlp --out alice.yaml\n" +
			"  shoal user create bob --role viewer --queue research --role submitter --queue research/cv\n" +
			"  shoal user create carol --role admin --csr carol.csr --key-file carol.key --cert-validity 720h --out carol.yaml\n" +
			"  shoal user create dave --oidc-username dave@example.com --role submitter --queue research --out dave.yaml\n" +
			"  shoal user create ml-team --oidc-group ml --role viewer --queue research",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bindings, err := userBindings(roles, queues)
			if err != nil {
				return err
			}
			req := &shoalv1.CreateUserRequest{Name: args[0], Bindings: bindings, OidcUsername: f.oidcUsername,
				OidcGroup: f.oidcGroup, CertValiditySeconds: int64(f.validity / time.Second)}
			if err := f.check(args[0]); err != nil {
				return err
			}
			if f.csr != "" {
				if req.CsrPem, err = os.ReadFile(f.csr); err != nil {
					return fmt.Errorf("--csr: %w", err)
				}
			}
			hctx, err := currentContext()
			if err != nil {
				return err
			}
			uc, done, err := usersClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := uc.CreateUser(cmd.Context(), req)
			if err != nil {
				return outCallError("create user/"+args[0], err)
			}
			if f.oidcGroup != "" {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "user/%s created: OIDC group %q gets its roles\n", args[0], f.oidcGroup)
				return err
			}
			ctx := configv1alpha1.Context{Name: args[0], Hub: hctx.Hub, ServerName: hctx.ServerName,
				CAData: string(resp.CaPem), CertData: string(resp.CertPem), KeyData: string(resp.KeyPem),
				TokenFile: f.oidcTokenFile}
			if len(req.CsrPem) > 0 {
				ctx.KeyFile = f.keyFile
			}
			return writeUserContext(cmd, f.out, ctx)
		},
	}
	cmd.Flags().StringArrayVar(&roles, "role", nil, "role to grant: admin, queue-admin, submitter or viewer (repeatable)")
	cmd.Flags().StringArrayVar(&queues, "queue", nil, "queue subtree of the role given at the same position (repeatable; none for admin)")
	cmd.Flags().StringVar(&f.out, "out", "", "shoal config file to write the user's context into (default: stdout)")
	cmd.Flags().StringVar(&f.csr, "csr", "", "PEM CSR the user made for its own key (`shoal user csr`): the hub signs it and never sees the key")
	cmd.Flags().StringVar(&f.keyFile, "key-file", "", "with --csr: the key's path as the written context names it (relative: beside the config file; default NAME.key)")
	cmd.Flags().StringVar(&f.oidcUsername, "oidc-username", "", "bind this OIDC username (the hub's --oidc-username-claim, with its prefix) to the user")
	cmd.Flags().StringVar(&f.oidcGroup, "oidc-group", "", "make the record a group binding: every OIDC token of this group gets the roles")
	cmd.Flags().StringVar(&f.oidcTokenFile, "oidc-token-file", "", "with --oidc-username: the ID token file the written context reads (relative: beside the config file)")
	cmd.Flags().DurationVar(&f.validity, "cert-validity", 0, "lifetime of the certificate (default and maximum: the hub's --user-cert-validity)")
	return cmd
}

// check refuses flags that do not go together, naming them.
func (f *userCreateFlags) check(name string) error {
	switch {
	case f.oidcGroup != "" && (f.csr != "" || f.oidcUsername != "" || f.out != "" || f.oidcTokenFile != "" || f.validity != 0):
		return errors.New("--oidc-group makes a group binding: it takes no --csr, --oidc-username, --out, --oidc-token-file or --cert-validity")
	case f.keyFile != "" && f.csr == "":
		return errors.New("--key-file names the key of a --csr: give --csr too")
	case f.oidcTokenFile != "" && f.oidcUsername == "":
		return errors.New("--oidc-token-file is for an --oidc-username user")
	case f.validity != 0 && f.csr == "" && f.oidcUsername != "":
		return errors.New("--cert-validity: an --oidc-username user without --csr gets no certificate")
	case f.validity < 0 || (f.validity > 0 && f.validity < time.Second):
		return fmt.Errorf("--cert-validity %s: give at least 1s", f.validity)
	}
	if f.csr != "" && f.keyFile == "" {
		f.keyFile = name + ".key"
	}
	return nil
}

// writeUserContext writes ctx into the config file out (merged), or a
// config of ctx alone to stdout.
func writeUserContext(cmd *cobra.Command, out string, ctx configv1alpha1.Context) error {
	if out == "" {
		cfg := &configv1alpha1.ClientConfig{}
		cfg.SetContext(ctx)
		b, err := yaml.Marshal(cfg)
		if err != nil {
			return err
		}
		_, err = cmd.OutOrStdout().Write(b)
		return err
	}
	cfg, err := configv1alpha1.Load(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	cfg.SetContext(ctx)
	if err := cfg.Save(out); err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "user/%s created; its config is in %s (context %s)\n", ctx.Name, out, ctx.Name)
	return err
}

func newUserListCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the users, their roles and certificate serials",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			uc, done, err := usersClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := uc.ListUsers(cmd.Context(), &shoalv1.ListUsersRequest{})
			if err != nil {
				return outCallError("list users", err)
			}
			var items []*v1alpha1.User
			for _, o := range resp.Items {
				var u v1alpha1.User
				if err := yaml.Unmarshal(o.Json, &u); err != nil {
					return err
				}
				items = append(items, &u)
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, outList(items)); ok {
				return err
			}
			w := outTable(cmd.OutOrStdout())
			fmt.Fprintln(w, "NAME\tROLES\tSERIAL\tOIDC\tSTATUS\tAGE")
			now := time.Now()
			for _, u := range items {
				var roles []string
				for _, b := range u.Spec.Bindings {
					roles = append(roles, string(b.Role)+outIf(b.Queue != "", "@"+b.Queue))
				}
				st := "Active"
				switch {
				case u.Status.Revoked:
					st = "Revoked"
				case u.Name == v1alpha1.BootstrapAdminName:
					st = fmt.Sprintf("%d revoked certificate(s)", len(u.Status.RevokedSerials))
				}
				oidc := u.Spec.OIDCUsername
				if u.Spec.OIDCGroup != "" {
					oidc = "group:" + u.Spec.OIDCGroup
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", u.Name, strings.Join(roles, ","), outDash(u.Status.Serial), outDash(oidc), st,
					outAge(u.CreationTimestamp, now))
			}
			return w.Flush()
		},
	}
	outFlag(cmd, &output)
	return cmd
}

// outIf is s when cond holds, else "".
func outIf(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

func newUserRevokeCommand() *cobra.Command {
	var serial string
	cmd := &cobra.Command{
		Use:   "revoke NAME | --serial HEX",
		Short: "Revoke a user (or one certificate by serial): refused from its next call on",
		Long: "revoke refuses every certificate of user NAME (or the certificate of serial HEX) from the next call on.\n" +
			"`shoal user revoke admin` revokes the hub's bootstrap admin certificate; to get it back, run\n" +
			"`shoal-hub reissue-admin` on the hub's machine (docs/security.md).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &shoalv1.RevokeUserRequest{Serial: serial}
			if len(args) == 1 {
				req.Name = args[0]
			}
			if (req.Name == "") == (req.Serial == "") {
				return errors.New("give a user NAME or --serial, not both")
			}
			uc, done, err := usersClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			o, err := uc.RevokeUser(cmd.Context(), req)
			if err != nil {
				return outCallError("revoke user", err)
			}
			var u v1alpha1.User
			if err := yaml.Unmarshal(o.Json, &u); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "user/%s revoked\n", u.Name)
			return err
		},
	}
	cmd.Flags().StringVar(&serial, "serial", "", "revoke the certificate of this serial (hex, as `shoal user list` shows)")
	return cmd
}

// errNo is `shoal auth can-i`'s answer no: exit status 1, nothing more printed.
var errNo = exitError{code: 1}

// exitError ends shoal with code and no further message.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newCanICommand() *cobra.Command {
	var queue string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "can-i VERB RESOURCE [--queue QUEUE]",
		Short: "Say whether the current identity may do VERB on RESOURCE (yes: exit 0, no: exit 1)",
		Long: "can-i asks the hub, which evaluates the same table as for real calls. Verbs: get, list, watch,\n" +
			"create, update, delete, cancel. Resources: jobs, queues, clusters, jointokens, gitops, rollouts, users.\n" +
			"Without --queue the question is \"in some queue\"; for jobs it is about the caller's own jobs.",
		Example: "  shoal auth can-i create jobs --queue research/nlp\n  shoal auth can-i delete queues --queue research",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			uc, done, err := usersClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := uc.CanI(cmd.Context(), &shoalv1.CanIRequest{Verb: args[0], Resource: args[1], Queue: queue})
			if err != nil {
				return outCallError("can-i", err)
			}
			answer := "no"
			if resp.Allowed {
				answer = "yes"
			}
			if !quiet {
				fmt.Fprintln(cmd.OutOrStdout(), answer)
				fmt.Fprintln(cmd.ErrOrStderr(), resp.Reason)
			}
			if !resp.Allowed {
				return errNo
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "queue the question is about (default: any queue)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing; answer by the exit status only")
	return cmd
}
