// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InvalidGitOpsSourceError reports a GitOpsSource field that cannot be used.
type InvalidGitOpsSourceError struct {
	Field  string
	Reason string
}

func (e *InvalidGitOpsSourceError) Error() string {
	return fmt.Sprintf("invalid gitops source: %s: %s", e.Field, e.Reason)
}

// ErrInvalidGitOpsSource matches every *InvalidGitOpsSourceError with errors.Is.
var ErrInvalidGitOpsSource = errors.New("invalid gitops source")

// Is makes errors.Is(err, ErrInvalidGitOpsSource) true.
func (e *InvalidGitOpsSourceError) Is(target error) bool { return target == ErrInvalidGitOpsSource }

// Validate checks the fields a sync cannot do without.
func (s GitOpsSource) Validate() error {
	u, err := url.Parse(s.URL)
	switch {
	case s.URL == "":
		return &InvalidGitOpsSourceError{Field: "url", Reason: "required"}
	case err != nil:
		return &InvalidGitOpsSourceError{Field: "url", Reason: err.Error()}
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ssh":
		return &InvalidGitOpsSourceError{Field: "url", Reason: "scheme must be http, https or ssh"}
	case s.Ref.Tag != "" && (s.Ref.Branch != "" || s.Ref.Commit != ""):
		return &InvalidGitOpsSourceError{Field: "ref", Reason: "tag excludes branch and commit"}
	case s.Ref.Commit != "" && !isHex(s.Ref.Commit):
		return &InvalidGitOpsSourceError{Field: "ref.commit", Reason: "must be a hexadecimal SHA"}
	case negative(s.Interval) || negative(s.HealthTimeout):
		return &InvalidGitOpsSourceError{Field: "interval", Reason: "must not be negative"}
	case strings.HasPrefix(path.Clean("/"+s.Path), "/..") || strings.Contains(s.Path, ".."):
		return &InvalidGitOpsSourceError{Field: "path", Reason: "must stay inside the repository"}
	}
	return nil
}

func negative(d *metav1.Duration) bool { return d != nil && d.Duration < 0 }

// WithDefaults returns s with unset intervals and an empty ref filled in.
// It copies the durations, so the result shares nothing with s.
func (s GitOpsSource) WithDefaults() GitOpsSource {
	s.Interval = &metav1.Duration{Duration: s.IntervalDuration()}
	s.HealthTimeout = &metav1.Duration{Duration: s.HealthTimeoutDuration()}
	if s.Ref == (GitOpsRef{}) {
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
