// SPDX-License-Identifier: Apache-2.0

package agentpod

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/internal/images"
)

// refNameAnnotation names the image reference on an OCI layout's index.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// agentImage returns the archive of the shoal-agent release image and its
// reference: `make images`' _output/images/shoal-agent.oci.tar when it is
// there, else the same image built here for this machine's architecture
// only from the test's static shoal-agent (hack/images.sh builds two).
func agentImage(t *testing.T) (archive, ref string) {
	t.Helper()
	out := filepath.Join(repoRoot(), "_output", "images")
	archive = filepath.Join(out, "shoal-agent.oci.tar")
	if _, err := os.Stat(archive); err == nil {
		ref, err := layoutRef(filepath.Join(out, "shoal-agent"))
		if err != nil {
			t.Fatalf("%s is there but its layout is not: %v (run `make images` again)", archive, err)
		}
		t.Logf("agent image: %s (%s, from `make images`)", ref, archive)
		return archive, ref
	}
	dir := filepath.Join(t.TempDir(), "shoal-agent")
	ref = "ghcr.io/shoal-dev/shoal-agent:e2e"
	r := images.Release{Name: "shoal-agent", Version: "e2e", Revision: "e2e", Source: "https://github.com/shoal-dev/shoal",
		Binaries: map[string]string{runtime.GOARCH: filepath.Join(bins, "shoal-agent")}}
	if err := r.WriteLayout(dir, ref); err != nil {
		t.Fatal(err)
	}
	if err := images.WriteLayoutArchive(dir, dir+".oci.tar"); err != nil {
		t.Fatal(err)
	}
	t.Logf("agent image: %s built for linux/%s (no _output/images/shoal-agent.oci.tar)", ref, runtime.GOARCH)
	return dir + ".oci.tar", ref
}

// layoutRef reads the reference name annotated on an OCI layout's index.
func layoutRef(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return "", err
	}
	var idx struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return "", err
	}
	for _, m := range idx.Manifests {
		if r := m.Annotations[refNameAnnotation]; r != "" {
			return r, nil
		}
	}
	return "", fmt.Errorf("no %s in %s/index.json", refNameAnnotation, dir)
}

// splitRef splits repository:tag.
func splitRef(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, "latest"
	}
	return ref[:i], ref[i+1:]
}
