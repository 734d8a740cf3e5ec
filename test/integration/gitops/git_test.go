// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// The Git server requires these HTTP basic-auth credentials for every repo.
const (
	gitUser     = "fleet-bot"
	gitPassword = "s3cret-token"
)

var repoSeq atomic.Int64

// gitRepo is a repository on the test Git server, branch main.
type gitRepo struct {
	name string
	url  string // without credentials, as a Source names it
}

// newRepoFromDir creates a repository whose first commit is the fixture dir.
func newRepoFromDir(t testing.TB, dir string) *gitRepo {
	t.Helper()
	name := filepath.Base(dir) + "-" + strconv.FormatInt(repoSeq.Add(1), 10) + ".git"
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := gitSrv.InitRepo(abs, "main", name); err != nil {
		t.Fatalf("init repo %s: %v", name, err)
	}
	return &gitRepo{name: name, url: gitSrv.HTTPAddress() + "/" + name}
}

// newRepo creates a repository whose first commit holds files.
func newRepo(t testing.TB, files map[string]string) *gitRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return newRepoFromDir(t, dir)
}

// push commits files (content "" deletes the file) on main and returns the
// new commit SHA.
func (r *gitRepo) push(t testing.TB, files map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	auth := &http.BasicAuth{Username: gitUser, Password: gitPassword}
	repo, err := git.CloneContext(ctx, memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL: r.url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("clone %s: %v", r.url, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if c == "" {
			if _, err := wt.Remove(p); err != nil {
				t.Fatalf("remove %s: %v", p, err)
			}
			continue
		}
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
	h, err := wt.Commit("test change", &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "t@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.PushContext(ctx, &git.PushOptions{Auth: auth}); err != nil {
		t.Fatalf("push: %v", err)
	}
	return h.String()
}

// head returns the SHA of main.
func (r *gitRepo) head(t testing.TB) string {
	t.Helper()
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{r.url}})
	refs, err := rem.List(&git.ListOptions{Auth: &http.BasicAuth{Username: gitUser, Password: gitPassword}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		if ref.Name() == plumbing.NewBranchReferenceName("main") {
			return ref.Hash().String()
		}
	}
	t.Fatal("no main branch")
	return ""
}

// tag creates a lightweight tag on main's head and pushes it.
func (r *gitRepo) tag(t testing.TB, name string) {
	t.Helper()
	auth := &http.BasicAuth{Username: gitUser, Password: gitPassword}
	repo, err := git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL: r.url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateTag(name, head.Hash(), nil); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{config.RefSpec("refs/tags/" + name + ":refs/tags/" + name)}}); err != nil {
		t.Fatalf("push tag: %v", err)
	}
}
