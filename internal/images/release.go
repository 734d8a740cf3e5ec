// SPDX-License-Identifier: Apache-2.0

package images

import (
	"fmt"
	"os"
	"path"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRootUser is the user (uid:gid) every release image runs as: the
// "nonroot" user of distroless images, so the chart's runAsNonRoot and a
// restricted Pod Security level hold without an override.
const NonRootUser = "65532:65532"

// The OCI annotation keys every release image carries as config labels
// (and the index as annotations).
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelLicenses = "org.opencontainers.image.licenses"
)

// Release is one multi-platform image of a program: one image per
// platform, each a single layer with the static binary at /<Name>, a
// passwd/group naming the non-root user, and (when CACerts is set) the
// system trust roots for OIDC issuers and external etcd.
type Release struct {
	// Name is the program, e.g. shoal-hub; it is the entrypoint /<Name>.
	Name string
	// Version and Revision go into the labels (git describe and commit).
	Version, Revision string
	// Source is the project's URL (org.opencontainers.image.source).
	Source string
	// Binaries maps a GOARCH (amd64, arm64) to the linux binary built for it.
	Binaries map[string]string
	// CACerts is a PEM bundle installed at /etc/ssl/certs/ca-certificates.crt; empty for none.
	CACerts []byte
}

// Labels returns the OCI labels of r.
func (r Release) Labels() map[string]string {
	return map[string]string{
		LabelTitle: r.Name, LabelVersion: r.Version, LabelRevision: r.Revision,
		LabelSource: r.Source, LabelLicenses: "Apache-2.0",
	}
}

// Arches returns r's architectures, sorted.
func (r Release) Arches() []string {
	out := make([]string, 0, len(r.Binaries))
	for a := range r.Binaries {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// Image returns r's image for arch.
func (r Release) Image(arch string) (v1.Image, error) {
	binPath, ok := r.Binaries[arch]
	if !ok {
		return nil, fmt.Errorf("release %s: no binary for %s", r.Name, arch)
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: %w", r.Name, arch, err)
	}
	files := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
	}
	if len(r.CACerts) > 0 {
		files = append(files,
			file{name: "etc/ssl/", mode: 0o755, dir: true},
			file{name: "etc/ssl/certs/", mode: 0o755, dir: true},
			file{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: r.CACerts})
	}
	files = append(files,
		// A writable scratch directory and home for the non-root user (the
		// root file system may be mounted read-only).
		file{name: "tmp/", mode: 0o1777, dir: true},
		file{name: "home/", mode: 0o755, dir: true},
		file{name: "home/nonroot/", mode: 0o700, dir: true, uid: 65532, gid: 65532},
		file{name: path.Clean(r.Name), mode: 0o755, data: bin},
	)
	img, err := imageOf(files, arch, func(cf *v1.ConfigFile) {
		if arch == "arm64" {
			cf.Variant = "v8"
		}
		cf.Config.Entrypoint = []string{"/" + r.Name}
		cf.Config.User = NonRootUser
		cf.Config.WorkingDir = "/home/nonroot"
		cf.Config.Env = []string{"PATH=/", "HOME=/home/nonroot", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
		cf.Config.Labels = r.Labels()
	})
	if err != nil {
		return nil, err
	}
	return mutate.MediaType(img, types.OCIManifestSchema1), nil
}

// Index returns r as an OCI image index with one manifest per architecture.
func (r Release) Index() (v1.ImageIndex, error) {
	if len(r.Binaries) == 0 {
		return nil, fmt.Errorf("release %s: no binaries", r.Name)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range r.Arches() {
		img, err := r.Image(arch)
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: "linux", Architecture: arch, Variant: cf.Variant},
			},
		})
	}
	return idx, nil
}

// WriteLayout writes r as an OCI image layout directory dir (replacing it),
// its index annotated with r's labels and the reference name ref.
func (r Release) WriteLayout(dir, ref string) error {
	idx, err := r.Index()
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	anns := r.Labels()
	anns["org.opencontainers.image.ref.name"] = ref
	return p.AppendIndex(idx, layout.WithAnnotations(anns))
}
