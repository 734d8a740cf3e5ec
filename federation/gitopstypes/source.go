package gitopstypes

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"
)

// DefaultInterval is the sync interval used when a Source leaves it zero.
const DefaultInterval = 5 * time.Minute

// DefaultHealthTimeout bounds how long a sync waits for applied objects to
// become healthy when a Source leaves HealthTimeout zero.
const DefaultHealthTimeout = 2 * time.Minute

// Ref selects what to check out. Exactly one of Branch, Tag or Commit is the
// target; Commit may be combined with Branch to fetch only that branch. An
// empty Ref means the branch "main".
type Ref struct {
	// Branch follows the head of a branch.
	Branch string `json:"branch,omitempty"`
	// Tag checks out a tag.
	Tag string `json:"tag,omitempty"`
	// Commit pins a full commit SHA (what a hub rollout sets).
	Commit string `json:"commit,omitempty"`
}

// String names the ref for messages: "branch main", "tag v1", "commit abc".
func (r Ref) String() string {
	switch {
	case r.Commit != "":
		return "commit " + r.Commit
	case r.Tag != "":
		return "tag " + r.Tag
	case r.Branch != "":
		return "branch " + r.Branch
	}
	return "branch main"
}

// Source is a cluster's GitOps source. Credentials are referenced by the name
// of a Secret in the agent's namespace of the workload cluster; the secret's
// contents are never sent to or stored on the hub.
type Source struct {
	// URL of the repository: https://, http:// or ssh://.
	URL string `json:"url"`
	// Ref is the branch, tag or commit to check out.
	Ref Ref `json:"ref,omitempty"`
	// Path inside the repository of the kustomization (or plain YAML
	// directory) to apply, e.g. "clusters/eu1". Empty means the root.
	Path string `json:"path,omitempty"`
	// Interval between syncs; drift is corrected at this rate.
	Interval time.Duration `json:"interval,omitempty"`
	// SecretRef names a Secret in the agent's namespace with `username` and
	// `password` (HTTPS basic auth or token), `bearerToken`, or `identity`
	// and `known_hosts` (SSH) keys. Empty means anonymous.
	SecretRef string `json:"secretRef,omitempty"`
	// Prune deletes objects Shoal applied earlier that left the source.
	Prune bool `json:"prune,omitempty"`
	// HealthTimeout bounds the wait for applied objects to become healthy.
	HealthTimeout time.Duration `json:"healthTimeout,omitempty"`
}

// InvalidSourceError reports a Source field that cannot be used.
type InvalidSourceError struct {
	Field  string
	Reason string
}

func (e *InvalidSourceError) Error() string {
	return fmt.Sprintf("invalid gitops source: %s: %s", e.Field, e.Reason)
}

// ErrInvalidSource matches every *InvalidSourceError with errors.Is.
var ErrInvalidSource = errors.New("invalid gitops source")

// Is makes errors.Is(err, ErrInvalidSource) true.
func (e *InvalidSourceError) Is(target error) bool { return target == ErrInvalidSource }

// Validate checks the fields a sync cannot do without.
func (s Source) Validate() error {
	u, err := url.Parse(s.URL)
	switch {
	case s.URL == "":
		return &InvalidSourceError{Field: "url", Reason: "required"}
	case err != nil:
		return &InvalidSourceError{Field: "url", Reason: err.Error()}
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ssh":
		return &InvalidSourceError{Field: "url", Reason: "scheme must be http, https or ssh"}
	case s.Ref.Tag != "" && (s.Ref.Branch != "" || s.Ref.Commit != ""):
		return &InvalidSourceError{Field: "ref", Reason: "tag excludes branch and commit"}
	case s.Ref.Commit != "" && !isHex(s.Ref.Commit):
		return &InvalidSourceError{Field: "ref.commit", Reason: "must be a hexadecimal SHA"}
	case s.Interval < 0 || s.HealthTimeout < 0:
		return &InvalidSourceError{Field: "interval", Reason: "must not be negative"}
	case strings.HasPrefix(path.Clean("/"+s.Path), "/..") || strings.Contains(s.Path, ".."):
		return &InvalidSourceError{Field: "path", Reason: "must stay inside the repository"}
	}
	return nil
}

// WithDefaults returns s with zero intervals and an empty ref filled in.
func (s Source) WithDefaults() Source {
	if s.Interval == 0 {
		s.Interval = DefaultInterval
	}
	if s.HealthTimeout == 0 {
		s.HealthTimeout = DefaultHealthTimeout
	}
	if s.Ref == (Ref{}) {
		s.Ref.Branch = "main"
	}
	return s
}

func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// SameCommit reports whether two commit SHAs name the same commit; either
// may be abbreviated (at least 7 characters).
func SameCommit(a, b string) bool {
	if len(a) < 7 || len(b) < 7 {
		return false
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return strings.HasPrefix(b, a)
}
