// SPDX-License-Identifier: Apache-2.0

package users

import (
	"fmt"
	"slices"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Verb is what a request does to a resource.
type Verb string

// The verbs.
const (
	Get    Verb = "get"
	List   Verb = "list"
	Watch  Verb = "watch"
	Create Verb = "create"
	Update Verb = "update"
	Delete Verb = "delete"
	Cancel Verb = "cancel"
)

// Verbs lists every verb.
var Verbs = []Verb{Get, List, Watch, Create, Update, Delete, Cancel}

// Resource is a kind of object the API serves.
type Resource string

// The resources. Only jobs and queues are scoped by queue; the others are
// for admins alone.
const (
	Jobs       Resource = "jobs"
	Queues     Resource = "queues"
	Clusters   Resource = "clusters"
	JoinTokens Resource = "jointokens"
	GitOps     Resource = "gitops"
	Rollouts   Resource = "rollouts"
	UsersRes   Resource = "users"
	// Models are model versions (docs/models.md): in no queue; a role with
	// the verb in some queue has it on every version.
	Models Resource = "models"
	// Services are inference services (docs/inference.md): in a queue,
	// with an owner, granted like jobs.
	Services Resource = "services"
	// Pools are GPU pools (docs/pools.md): in no queue; the admin changes
	// them, every role reads them.
	Pools Resource = "pools"
)

// Resources lists every resource.
var Resources = []Resource{Jobs, Queues, Clusters, JoinTokens, GitOps, Rollouts, UsersRes, Models, Services, Pools}

// Method is how a principal authenticated.
type Method string

// The authentication methods.
const (
	// MethodCertificate is a client certificate of the hub CA.
	MethodCertificate Method = "certificate"
	// MethodOIDC is an ID token of the hub's OIDC issuer.
	MethodOIDC Method = "oidc"
)

// Principal is an authenticated user and its role bindings.
type Principal struct {
	// Name is the user's name (v1alpha1.BootstrapAdminName for the
	// bootstrap admin; OIDCPrincipalPrefix + the OIDC username for a token
	// that only group records bind).
	Name string
	// Bindings are the user's roles.
	Bindings []v1alpha1.RoleBinding
	// Method is how it authenticated.
	Method Method
	// Serial is the client certificate's serial (certificate only).
	Serial string
	// OIDCUsername and Groups are the token's (oidc only); GroupRecords
	// are the group records whose bindings it holds.
	OIDCUsername string
	Groups       []string
	GroupRecords []string
}

// Request is one thing a principal wants to do.
type Request struct {
	Verb     Verb
	Resource Resource
	// Queue is the queue of the object; with AnyQueue, the question is
	// whether the principal may do it in some queue (a list or watch that
	// is filtered afterwards, can-i without --queue).
	Queue    string
	AnyQueue bool
	// Owner is the job's owner; with AnyOwner, the question is whether the
	// principal may do it to some job (its own at least).
	Owner    string
	AnyOwner bool
}

// Decision is Allowed's answer.
type Decision struct {
	Allowed bool
	// Reason names the binding that allows it, or says why not.
	Reason string
}

// grant is what a role allows on a resource in its subtree.
type grant struct {
	verbs []Verb
	// ownOnly limits the grant to the principal's own jobs.
	ownOnly bool
}

// roleGrants is the one table of what each non-admin role may do within
// its queue subtree (docs/security.md). The admin role allows everything.
var roleGrants = map[v1alpha1.UserRole]map[Resource][]grant{
	v1alpha1.UserRoleQueueAdmin: {
		Jobs:     {{verbs: []Verb{Get, List, Watch, Create, Update, Cancel, Delete}}},
		Queues:   {{verbs: []Verb{Get, List, Create, Update, Delete}}},
		Models:   {{verbs: []Verb{Get, List, Create}}},
		Services: {{verbs: []Verb{Get, List, Create, Update, Delete}}},
		Pools:    {{verbs: []Verb{Get, List}}},
	},
	v1alpha1.UserRoleSubmitter: {
		Jobs: {
			{verbs: []Verb{Create}},
			{verbs: []Verb{Get, List, Watch, Update, Cancel, Delete}, ownOnly: true},
		},
		Queues: {{verbs: []Verb{Get, List}}},
		Models: {{verbs: []Verb{Get, List, Create}}},
		Services: {
			{verbs: []Verb{Create}},
			{verbs: []Verb{Get, List, Update, Delete}, ownOnly: true},
		},
		Pools: {{verbs: []Verb{Get, List}}},
	},
	v1alpha1.UserRoleViewer: {
		Jobs:     {{verbs: []Verb{Get, List, Watch}}},
		Queues:   {{verbs: []Verb{Get, List}}},
		Models:   {{verbs: []Verb{Get, List}}},
		Services: {{verbs: []Verb{Get, List}}},
		Pools:    {{verbs: []Verb{Get, List}}},
	},
}

// Allowed decides r for p from p's bindings and the role table.
func Allowed(p Principal, r Request) Decision {
	for _, b := range p.Bindings {
		if b.Role == v1alpha1.UserRoleAdmin {
			return Decision{Allowed: true, Reason: "role admin"}
		}
		if !r.AnyQueue && !v1alpha1.InSubtree(r.Queue, b.Queue) {
			continue
		}
		for _, g := range roleGrants[b.Role][r.Resource] {
			if !slices.Contains(g.verbs, r.Verb) {
				continue
			}
			if g.ownOnly && !r.AnyOwner && r.Owner != p.Name {
				continue
			}
			reason := fmt.Sprintf("role %s on queue %s", b.Role, b.Queue)
			if g.ownOnly {
				reason += " (own jobs only)"
			}
			return Decision{Allowed: true, Reason: reason}
		}
	}
	what := fmt.Sprintf("%s %s", r.Verb, r.Resource)
	if r.Resource == Jobs && r.Owner != "" && !r.AnyOwner && r.Owner != p.Name {
		what += fmt.Sprintf(" of user %q", r.Owner)
	}
	if !r.AnyQueue && r.Queue != "" {
		what += fmt.Sprintf(" in queue %s", r.Queue)
	}
	return Decision{Reason: fmt.Sprintf("user %q may not %s (bindings: %s)", p.Name, what, bindingsString(p.Bindings))}
}

// Filter reports whether p may see an object of resource in queue owned
// by owner with verb (list and watch results).
func Filter(p Principal, verb Verb, res Resource, queue, owner string) bool {
	return Allowed(p, Request{Verb: verb, Resource: res, Queue: queue, Owner: owner}).Allowed
}

func bindingsString(bs []v1alpha1.RoleBinding) string {
	if len(bs) == 0 {
		return "none"
	}
	s := ""
	for i, b := range bs {
		if i > 0 {
			s += ", "
		}
		s += string(b.Role)
		if b.Queue != "" {
			s += "@" + b.Queue
		}
	}
	return s
}
