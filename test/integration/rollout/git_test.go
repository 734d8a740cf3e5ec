// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// newFleetRepo creates a repository from the fleet fixture (base/ and
// clusters/{eu1,us1}/) and returns its URL and head commit.
func newFleetRepo(t *testing.T) (url, head string) {
	t.Helper()
	dir, err := filepath.Abs("../../testdata/gitops/fleet")
	if err != nil {
		t.Fatal(err)
	}
	if err := gitSrv.InitRepo(dir, "main", "fleet.git"); err != nil {
		t.Fatal(err)
	}
	url = gitSrv.HTTPAddress() + "/fleet.git"
	return url, push(t, url, nil)
}

// push commits files on main (none: an empty commit) and returns its SHA.
func push(t *testing.T, url string, files map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	auth := &http.BasicAuth{Username: gitUser, Password: gitPassword}
	repo, err := git.CloneContext(ctx, memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL: url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("clone %s: %v", url, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		f, err := wt.Filesystem.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	h, err := wt.Commit("change", &git.CommitOptions{AllowEmptyCommits: true,
		Author: &object.Signature{Name: "test", Email: "t@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.PushContext(ctx, &git.PushOptions{Auth: auth}); err != nil {
		t.Fatalf("push: %v", err)
	}
	return h.String()
}
