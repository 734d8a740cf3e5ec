// SPDX-License-Identifier: Apache-2.0

package images

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Expect is what VerifyLayout checks a release layout against.
type Expect struct {
	// Name is the program: the entrypoint must be /<Name>, the title label Name.
	Name string
	// Arches are the architectures the index must hold, no more, no less.
	Arches []string
	// Version is the version label every image must carry.
	Version string
}

// PlatformReport describes one verified image of a release.
type PlatformReport struct {
	Arch       string
	Digest     string
	User       string
	Entrypoint []string
	// Size is the compressed size of the image's layers in bytes (what a node pulls).
	Size int64
}

// elfMachine is the ELF machine of a linux binary for each GOARCH a release may hold.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// VerifyLayout reads the OCI layout dir written by Release.WriteLayout and
// checks it against want: one image index whose platforms are exactly
// want.Arches; in each image the OS and architecture, a non-root user, the
// entrypoint /<Name> present in the layer as an executable, statically
// linked ELF binary of that architecture, and the version labels. It
// returns what it found per platform, or every failed check in one error.
func VerifyLayout(dir string, want Expect) ([]PlatformReport, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(tm.Manifests) != 1 || !tm.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s: index.json must name exactly one image index, names %d manifests", dir, len(tm.Manifests))
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var errs []error
	var got []string
	var out []PlatformReport
	for _, d := range im.Manifests {
		if d.Platform == nil {
			errs = append(errs, fmt.Errorf("manifest %s has no platform", d.Digest))
			continue
		}
		got = append(got, d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r, err := verifyImage(img, *d.Platform, want)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", d.Platform.OS, d.Platform.Architecture, err))
			continue
		}
		r.Digest = d.Digest.String()
		out = append(out, r)
	}
	slices.Sort(got)
	wantArches := slices.Sorted(slices.Values(want.Arches))
	if !slices.Equal(got, wantArches) {
		errs = append(errs, fmt.Errorf("architectures %v, want %v", got, wantArches))
	}
	return out, errors.Join(errs...)
}

func verifyImage(img v1.Image, pl v1.Platform, want Expect) (PlatformReport, error) {
	r := PlatformReport{Arch: pl.Architecture}
	cf, err := img.ConfigFile()
	if err != nil {
		return r, err
	}
	var errs []error
	if cf.OS != "linux" || pl.OS != "linux" {
		errs = append(errs, fmt.Errorf("os %q (index says %q), want linux", cf.OS, pl.OS))
	}
	if cf.Architecture != pl.Architecture {
		errs = append(errs, fmt.Errorf("config architecture %q, index says %q", cf.Architecture, pl.Architecture))
	}
	r.User, r.Entrypoint = cf.Config.User, cf.Config.Entrypoint
	if !nonRoot(cf.Config.User) {
		errs = append(errs, fmt.Errorf("user %q: must be a non-zero numeric uid", cf.Config.User))
	}
	entry := "/" + want.Name
	if !slices.Equal(cf.Config.Entrypoint, []string{entry}) {
		errs = append(errs, fmt.Errorf("entrypoint %v, want [%s]", cf.Config.Entrypoint, entry))
	}
	if v := cf.Config.Labels[LabelVersion]; v != want.Version {
		errs = append(errs, fmt.Errorf("label %s = %q, want %q", LabelVersion, v, want.Version))
	}
	if cf.Config.Labels[LabelRevision] == "" {
		errs = append(errs, fmt.Errorf("label %s is empty", LabelRevision))
	}
	if v := cf.Config.Labels[LabelTitle]; v != want.Name {
		errs = append(errs, fmt.Errorf("label %s = %q, want %q", LabelTitle, v, want.Name))
	}
	layers, err := img.Layers()
	if err != nil {
		return r, err
	}
	var bin []byte
	var mode int64
	for _, l := range layers {
		sz, err := l.Size()
		if err != nil {
			return r, err
		}
		r.Size += sz
		b, m, err := findFile(l, strings.TrimPrefix(entry, "/"))
		if err != nil {
			return r, err
		}
		if b != nil {
			bin, mode = b, m
		}
	}
	if bin == nil {
		errs = append(errs, fmt.Errorf("entrypoint %s is not in the image", entry))
	} else {
		if mode&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s is not executable (mode %o)", entry, mode))
		}
		if err := checkELF(bin, pl.Architecture); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", entry, err))
		}
	}
	return r, errors.Join(errs...)
}

// nonRoot reports whether user (uid or uid:gid) names a numeric non-zero
// uid: a name could resolve to root, and runAsNonRoot needs a number.
func nonRoot(user string) bool {
	uid, _, _ := strings.Cut(user, ":")
	n, err := strconv.Atoi(uid)
	return err == nil && n > 0
}

func findFile(l v1.Layer, name string) ([]byte, int64, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		if strings.TrimPrefix(h.Name, "./") == name && h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			return b, h.Mode, err
		}
	}
}

// checkELF checks that bin is a statically linked linux ELF executable for arch.
func checkELF(bin []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	want, ok := elfMachine[arch]
	if !ok {
		return fmt.Errorf("no ELF machine known for %s", arch)
	}
	if f.Machine != want {
		return fmt.Errorf("ELF machine %s, want %s for %s", f.Machine, want, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (has an ELF interpreter); the image has no libc: build with CGO_ENABLED=0")
		}
	}
	return nil
}
