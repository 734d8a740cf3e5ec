// SPDX-License-Identifier: Apache-2.0

// Package images builds container images for the project's own static Go
// programs without Docker or a registry: each image is one layer holding the
// binary, written as an image archive (docker save format, which containerd's
// `ctr images import` reads) and imported into a node's containerd.
package images

import (
	"fmt"
	"os"
	"path"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Spec is one image: a static binary at /<Binary's base name> and its entrypoint.
type Spec struct {
	// Ref is the image reference, e.g. shoal.local/rendezvous:dev.
	Ref string
	// Binary is the path of a statically linked executable on this machine.
	Binary string
	// Args are appended to the entrypoint (the image's Cmd).
	Args []string
	// Env are KEY=VALUE pairs of the image config.
	Env []string
}

// epoch is the fixed timestamp of every file and of the image config, so the
// same binary always gives the same image digest.
var epoch = time.Unix(0, 0).UTC()

// Build returns the image of s.
func Build(s Spec) (v1.Image, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Ref, err)
	}
	entry := "/" + path.Base(s.Binary)
	return imageOf([]file{
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "etc/", mode: 0o1777, dir: true},
		{name: entry[1:], mode: 0o755, data: bin},
	}, runtime.GOARCH, func(cf *v1.ConfigFile) {
		cf.Config.Entrypoint, cf.Config.Cmd = []string{entry}, s.Args
		cf.Config.Env = append([]string{"PATH=/"}, s.Env...)
	})
}

// WriteArchive builds s and writes it to file as an image archive tagged s.Ref.
func WriteArchive(s Spec, file string) error {
	img, err := Build(s)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(s.Ref)
	if err != nil {
		return fmt.Errorf("image %s: %w", s.Ref, err)
	}
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		return fmt.Errorf("image %s: %w", s.Ref, err)
	}
	return os.Rename(tmp, file)
}
