// SPDX-License-Identifier: Apache-2.0

package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// crossBuild builds the project's smallest program for linux/arch the way
// hack/images.sh builds the release binaries, and returns its path.
func crossBuild(t *testing.T, dir, arch string) string {
	t.Helper()
	out := filepath.Join(dir, arch, "shoal-pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "github.com/shoal-dev/shoal/cmd/shoal-pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for %s: %v\n%s", arch, err, b)
	}
	return out
}

func TestReleaseLayoutVerifies(t *testing.T) {
	dir := t.TempDir()
	amd, arm := crossBuild(t, dir, "amd64"), crossBuild(t, dir, "arm64")
	want := Expect{Name: "shoal-pause", Arches: []string{"amd64", "arm64"}, Version: "v1.2.3"}
	r := Release{Name: "shoal-pause", Version: "v1.2.3", Revision: "abc123", Source: "https://example.test/shoal",
		Binaries: map[string]string{"amd64": amd, "arm64": arm}, CACerts: []byte("# none\n")}
	lay := filepath.Join(dir, "layout")
	if err := r.WriteLayout(lay, "ghcr.io/shoal-dev/shoal-pause:v1.2.3"); err != nil {
		t.Fatal(err)
	}
	reports, err := VerifyLayout(lay, want)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(reports) != 2 || reports[0].Arch != "amd64" || reports[1].Arch != "arm64" {
		t.Fatalf("reports %+v", reports)
	}
	for _, rep := range reports {
		if rep.User != NonRootUser || rep.Size == 0 {
			t.Fatalf("report %+v", rep)
		}
	}

	// The archive reads back as the same layout, and building twice gives the same bytes.
	tar1, tar2 := filepath.Join(dir, "a.oci.tar"), filepath.Join(dir, "b.oci.tar")
	if err := WriteLayoutArchive(lay, tar1); err != nil {
		t.Fatal(err)
	}
	lay2 := filepath.Join(dir, "layout2")
	if err := r.WriteLayout(lay2, "ghcr.io/shoal-dev/shoal-pause:v1.2.3"); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayoutArchive(lay2, tar2); err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(tar1)
	b2, _ := os.ReadFile(tar2)
	if len(b1) == 0 || string(b1) != string(b2) {
		t.Fatalf("two builds of the same release differ (%d and %d bytes)", len(b1), len(b2))
	}
	p, err := layout.FromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := p.ImageIndex()
	im, _ := idx.IndexManifest()
	if got := im.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != "ghcr.io/shoal-dev/shoal-pause:v1.2.3" {
		t.Fatalf("ref.name %q", got)
	}
}

func TestVerifyLayoutRefusesWrongImages(t *testing.T) {
	dir := t.TempDir()
	amd, arm := crossBuild(t, dir, "amd64"), crossBuild(t, dir, "arm64")
	cases := []struct {
		name    string
		release Release
		want    Expect
		errs    []string
	}{
		{"arm64 binary labelled amd64",
			Release{Name: "shoal-pause", Version: "v1", Revision: "r", Binaries: map[string]string{"amd64": arm, "arm64": arm}},
			Expect{Name: "shoal-pause", Arches: []string{"amd64", "arm64"}, Version: "v1"},
			[]string{"linux/amd64", "ELF machine EM_AARCH64, want EM_X86_64"}},
		{"an architecture missing",
			Release{Name: "shoal-pause", Version: "v1", Revision: "r", Binaries: map[string]string{"amd64": amd}},
			Expect{Name: "shoal-pause", Arches: []string{"amd64", "arm64"}, Version: "v1"},
			[]string{"architectures [amd64], want [amd64 arm64]"}},
		{"wrong version and entrypoint",
			Release{Name: "shoal-pause", Version: "v0", Binaries: map[string]string{"amd64": amd, "arm64": arm}},
			Expect{Name: "shoal-hub", Arches: []string{"amd64", "arm64"}, Version: "v1"},
			[]string{`version = "v0", want "v1"`, "revision is empty", "entrypoint [/shoal-pause], want [/shoal-hub]", "/shoal-hub is not in the image"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lay := filepath.Join(t.TempDir(), "layout")
			if err := c.release.WriteLayout(lay, "x:y"); err != nil {
				t.Fatal(err)
			}
			_, err := VerifyLayout(lay, c.want)
			if err == nil {
				t.Fatal("verify passed")
			}
			for _, e := range c.errs {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("error %q does not contain %q", err, e)
				}
			}
		})
	}
}

func TestNonRoot(t *testing.T) {
	for user, want := range map[string]bool{"": false, "0": false, "0:0": false, "root": false, "nonroot": false, "65532:65532": true, "1000": true} {
		if got := nonRoot(user); got != want {
			t.Errorf("nonRoot(%q) = %v, want %v", user, got, want)
		}
	}
}
