// SPDX-License-Identifier: Apache-2.0

package images

import (
	"archive/tar"
	"bytes"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// file is one entry of an image layer.
type file struct {
	name     string // path inside the image, without the leading slash; directories end in "/"
	mode     int64
	dir      bool
	data     []byte
	uid, gid int
}

// layerOf returns one uncompressed-on-build, gzip-on-write layer holding
// files in order, every timestamp at epoch (reproducible digests).
func layerOf(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch, Uid: f.uid, Gid: f.gid}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if !f.dir {
			if _, err := tw.Write(f.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// imageOf returns the one-layer linux image of files for arch, its config
// (created at epoch) adjusted by configure.
func imageOf(files []file, arch string, configure func(*v1.ConfigFile)) (v1.Image, error) {
	layer, err := layerOf(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: epoch}
	configure(cf)
	return mutate.ConfigFile(img, cf)
}
