// SPDX-License-Identifier: Apache-2.0

// Command imagetool builds and verifies the release images of `make
// images` (see hack/images.sh and docs/images.md):
//
//	imagetool build  -name shoal-hub -version V -revision R -out DIR -bin amd64=PATH -bin arm64=PATH
//	imagetool verify -name shoal-hub -version V -arches amd64,arm64 DIR
//
// build writes an OCI image layout DIR and the archive DIR.oci.tar; verify
// checks a layout (platforms, non-root user, entrypoint, static ELF of the
// right architecture, labels) and prints one line per platform.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/shoal-dev/shoal/internal/images"
)

type binFlags map[string]string

func (b binFlags) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binFlags) Set(v string) error {
	arch, p, ok := strings.Cut(v, "=")
	if !ok || arch == "" || p == "" {
		return fmt.Errorf("want ARCH=PATH, got %q", v)
	}
	b[arch] = p
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: imagetool build|verify [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "verify":
		err = verify(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (build or verify)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagetool:", err)
		os.Exit(1)
	}
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	r := images.Release{Binaries: binFlags{}}
	var out, ref, caFile string
	fs.StringVar(&r.Name, "name", "", "program name (entrypoint /NAME)")
	fs.StringVar(&r.Version, "version", "", "version label")
	fs.StringVar(&r.Revision, "revision", "", "revision label (git commit)")
	fs.StringVar(&r.Source, "source", "https://github.com/shoal-dev/shoal", "source label")
	fs.StringVar(&out, "out", "", "OCI layout directory to write")
	fs.StringVar(&ref, "ref", "", "reference name annotated on the index (default ghcr.io/shoal-dev/NAME:VERSION)")
	fs.StringVar(&caFile, "ca-certificates", "", "PEM bundle installed as /etc/ssl/certs/ca-certificates.crt (optional)")
	fs.Var(binFlags(r.Binaries), "bin", "ARCH=PATH of a linux binary (repeat per architecture)")
	_ = fs.Parse(args)
	if r.Name == "" || r.Version == "" || out == "" {
		return fmt.Errorf("build needs -name, -version and -out")
	}
	if ref == "" {
		ref = "ghcr.io/shoal-dev/" + r.Name + ":" + r.Version
	}
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		r.CACerts = b
	}
	if err := r.WriteLayout(out, ref); err != nil {
		return err
	}
	return images.WriteLayoutArchive(out, out+".oci.tar")
}

func verify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	var want images.Expect
	var arches string
	fs.StringVar(&want.Name, "name", "", "program name")
	fs.StringVar(&want.Version, "version", "", "expected version label")
	fs.StringVar(&arches, "arches", "amd64,arm64", "expected architectures")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || want.Name == "" || want.Version == "" {
		return fmt.Errorf("verify needs -name, -version and one layout directory")
	}
	want.Arches = strings.Split(arches, ",")
	reports, err := images.VerifyLayout(fs.Arg(0), want)
	for _, r := range reports {
		fmt.Printf("  %-10s linux/%-6s user %s entrypoint %v %5.1f MiB %s\n", want.Name, r.Arch, r.User, r.Entrypoint, float64(r.Size)/(1<<20), r.Digest)
	}
	return err
}
