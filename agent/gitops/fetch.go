// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"context"
	"os"

	"github.com/fluxcd/pkg/git"
	"github.com/fluxcd/pkg/git/gogit"
	"github.com/fluxcd/pkg/git/repository"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// checkout is one revision of the repository on disk.
type checkout struct {
	// Dir is the worktree root.
	Dir string
	// Revision is "<branch|tag>@sha1:<sha>" or "sha1:<sha>" for a commit pin.
	Revision string
	// Commit is the bare SHA.
	Commit string
}

// fetcher clones a source into a working directory and keeps the last
// checkout, so that a sync whose ref did not move reuses it without cloning.
type fetcher struct {
	workDir      string
	insecureHTTP bool

	key  string // URL and ref of the cached checkout
	last *checkout
}

// fetch returns a checkout of src at its ref. A branch or tag whose head has
// not moved, or a commit already checked out, costs one ls-remote or nothing.
func (f *fetcher) fetch(ctx context.Context, src v1alpha1.GitOpsSource, auth *git.AuthOptions) (*checkout, error) {
	key := src.URL + "#" + src.Ref.String() + "#" + src.Ref.Branch
	cfg := repository.CloneConfig{ShallowClone: true, CheckoutStrategy: strategy(src.Ref)}
	if f.last != nil && f.key == key {
		if src.Ref.Commit != "" && v1alpha1.SameCommit(f.last.Commit, src.Ref.Commit) {
			return f.last, nil
		}
		cfg.LastObservedCommit = f.last.Revision
	}
	if err := os.MkdirAll(f.workDir, 0o700); err != nil {
		return nil, syncErr(v1alpha1.GitOpsReasonFetchFailed, "create work dir: %w", err)
	}
	dir, err := os.MkdirTemp(f.workDir, "checkout-")
	if err != nil {
		return nil, syncErr(v1alpha1.GitOpsReasonFetchFailed, "create checkout dir: %w", err)
	}
	opts := []gogit.ClientOption{gogit.WithDiskStorage()}
	if f.insecureHTTP {
		opts = append(opts, gogit.WithInsecureCredentialsOverHTTP())
	}
	c, err := gogit.NewClient(dir, auth, opts...)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, syncErr(v1alpha1.GitOpsReasonFetchFailed, "git client: %w", err)
	}
	defer c.Close()
	commit, err := c.Clone(ctx, src.URL, cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, syncErr(v1alpha1.GitOpsReasonFetchFailed, "fetch %s at %s: %w", src.URL, src.Ref, err)
	}
	if commit == nil {
		_ = os.RemoveAll(dir)
		return nil, syncErr(v1alpha1.GitOpsReasonFetchFailed, "fetch %s at %s: repository is empty", src.URL, src.Ref)
	}
	if !git.IsConcreteCommit(*commit) {
		// The remote head equals the cached checkout.
		_ = os.RemoveAll(dir)
		return f.last, nil
	}
	if f.last != nil {
		_ = os.RemoveAll(f.last.Dir)
	}
	f.key = key
	f.last = &checkout{Dir: dir, Revision: commit.String(), Commit: commit.Hash.String()}
	return f.last, nil
}

func strategy(r v1alpha1.GitOpsRef) repository.CheckoutStrategy {
	switch {
	case r.Commit != "":
		return repository.CheckoutStrategy{Commit: r.Commit, Branch: r.Branch}
	case r.Tag != "":
		return repository.CheckoutStrategy{Tag: r.Tag}
	case r.Branch != "":
		return repository.CheckoutStrategy{Branch: r.Branch}
	}
	return repository.CheckoutStrategy{Branch: "main"}
}
