// SPDX-License-Identifier: Apache-2.0

package users_test

import (
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/users"
)

func TestAllowed(t *testing.T) {
	p := func(role v1alpha1.UserRole, q string) users.Principal {
		return users.Principal{Name: "u", Bindings: []v1alpha1.RoleBinding{{Role: role, Queue: q}}}
	}
	in := func(v users.Verb, r users.Resource, q, owner string) users.Request {
		return users.Request{Verb: v, Resource: r, Queue: q, Owner: owner}
	}
	admin := p(v1alpha1.UserRoleAdmin, "")
	qa := p(v1alpha1.UserRoleQueueAdmin, "a/b")
	sub := p(v1alpha1.UserRoleSubmitter, "a/b")
	view := p(v1alpha1.UserRoleViewer, "a")
	tests := []struct {
		name string
		p    users.Principal
		r    users.Request
		want bool
	}{
		{"admin deletes a cluster", admin, in(users.Delete, users.Clusters, "", ""), true},
		{"admin cancels any job", admin, in(users.Cancel, users.Jobs, "z", "x"), true},
		{"queue-admin updates its queue", qa, in(users.Update, users.Queues, "a/b", ""), true},
		{"queue-admin deletes below", qa, in(users.Delete, users.Queues, "a/b/c", ""), true},
		{"queue-admin updates its parent", qa, in(users.Update, users.Queues, "a", ""), false},
		{"queue-admin cancels another's job", qa, in(users.Cancel, users.Jobs, "a/b/c", "x"), true},
		{"queue-admin reads clusters", qa, in(users.List, users.Clusters, "", ""), false},
		{"submitter submits", sub, in(users.Create, users.Jobs, "a/b/c", "u"), true},
		{"submitter submits to a/c", sub, in(users.Create, users.Jobs, "a/c", "u"), false},
		{"submitter submits to a/bb", sub, in(users.Create, users.Jobs, "a/bb", "u"), false},
		{"submitter cancels own", sub, in(users.Cancel, users.Jobs, "a/b", "u"), true},
		{"submitter cancels another's", sub, in(users.Cancel, users.Jobs, "a/b", "x"), false},
		{"submitter deletes own", sub, in(users.Delete, users.Jobs, "a/b", "u"), true},
		{"submitter deletes another's", sub, in(users.Delete, users.Jobs, "a/b", "x"), false},
		{"queue-admin deletes another's job below", qa, in(users.Delete, users.Jobs, "a/b/c", "x"), true},
		{"queue-admin deletes a job above", qa, in(users.Delete, users.Jobs, "a", "x"), false},
		{"viewer deletes a job", view, in(users.Delete, users.Jobs, "a/b", "u"), false},
		{"submitter reads an ownerless job", sub, in(users.Get, users.Jobs, "a/b", ""), false},
		{"submitter reads another's", sub, in(users.Get, users.Jobs, "a/b", "x"), false},
		{"submitter reads its queue", sub, in(users.Get, users.Queues, "a/b", ""), true},
		{"submitter updates its queue", sub, in(users.Update, users.Queues, "a/b", ""), false},
		{"submitter lists some jobs", sub, users.Request{Verb: users.List, Resource: users.Jobs, AnyQueue: true, AnyOwner: true}, true},
		{"viewer reads another's", view, in(users.Get, users.Jobs, "a/b", "x"), true},
		{"viewer cancels", view, in(users.Cancel, users.Jobs, "a/b", "u"), false},
		{"viewer submits", view, in(users.Create, users.Jobs, "a/b", "u"), false},
		{"viewer updates a queue", view, in(users.Update, users.Queues, "a", ""), false},
		{"viewer reads outside", view, in(users.Get, users.Jobs, "b", "x"), false},
		{"viewer creates users", view, users.Request{Verb: users.Create, Resource: users.UsersRes, AnyQueue: true}, false},
		{"nobody", users.Principal{Name: "n"}, in(users.Get, users.Jobs, "a", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := users.Allowed(tt.p, tt.r)
			if d.Allowed != tt.want {
				t.Fatalf("Allowed = %+v, want %v", d, tt.want)
			}
			if d.Reason == "" {
				t.Fatal("no reason")
			}
		})
	}
}

func TestDeniedReasonNamesWhat(t *testing.T) {
	p := users.Principal{Name: "u", Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleSubmitter, Queue: "a/b"}}}
	d := users.Allowed(p, users.Request{Verb: users.Cancel, Resource: users.Jobs, Queue: "a/b", Owner: "x"})
	for _, want := range []string{`user "u"`, "cancel jobs", `of user "x"`, "a/b", "submitter@a/b"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q lacks %q", d.Reason, want)
		}
	}
}

func TestValidateUser(t *testing.T) {
	u := func(name string, bs ...v1alpha1.RoleBinding) *v1alpha1.User {
		x := &v1alpha1.User{Spec: v1alpha1.UserSpec{Bindings: bs}}
		x.Name = name
		return x
	}
	for _, tt := range []struct {
		u    *v1alpha1.User
		path string
	}{
		{u("admin", v1alpha1.RoleBinding{Role: v1alpha1.UserRoleAdmin}), "metadata.name"},
		{u("Bad_Name", v1alpha1.RoleBinding{Role: v1alpha1.UserRoleAdmin}), "metadata.name"},
		{u("x"), "spec.bindings"},
		{u("x", v1alpha1.RoleBinding{Role: "root"}), "spec.bindings[0].role"},
		{u("x", v1alpha1.RoleBinding{Role: v1alpha1.UserRoleViewer}), "spec.bindings[0].queue"},
		{u("x", v1alpha1.RoleBinding{Role: v1alpha1.UserRoleAdmin, Queue: "a"}), "spec.bindings[0].queue"},
	} {
		errs := v1alpha1.ValidateUser(tt.u)
		if len(errs) == 0 || errs[0].Field != tt.path {
			t.Errorf("%+v: errors %v, want one at %s", tt.u, errs, tt.path)
		}
	}
	if errs := v1alpha1.ValidateUser(u("alice", v1alpha1.RoleBinding{Role: v1alpha1.UserRoleSubmitter, Queue: "a/b"})); len(errs) > 0 {
		t.Errorf("valid user refused: %v", errs)
	}
	admin := v1alpha1.RoleBinding{Role: v1alpha1.UserRoleAdmin}
	oidc := func(username, group string) *v1alpha1.User {
		x := u("dave", admin)
		x.Spec.OIDCUsername, x.Spec.OIDCGroup = username, group
		return x
	}
	for _, tt := range []struct {
		u    *v1alpha1.User
		path string
	}{
		{oidc("dave @example.com", ""), "spec.oidcUsername"},
		{oidc("", "ml\n"), "spec.oidcGroup"},
		{oidc(strings.Repeat("x", v1alpha1.MaxOIDCNameLength+1), ""), "spec.oidcUsername"},
		{oidc("dave@example.com", "ml"), "spec.oidcGroup"},
	} {
		errs := v1alpha1.ValidateUser(tt.u)
		if len(errs) != 1 || errs[0].Field != tt.path {
			t.Errorf("%+v: errors %v, want one at %s", tt.u.Spec, errs, tt.path)
		}
	}
	for _, x := range []*v1alpha1.User{oidc("https://id.example.com#dave", ""), oidc("", "corp:ml-team")} {
		if errs := v1alpha1.ValidateUser(x); len(errs) > 0 {
			t.Errorf("valid OIDC binding %+v refused: %v", x.Spec, errs)
		}
	}
}
