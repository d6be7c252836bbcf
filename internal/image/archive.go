package image

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"cnbench/internal/version"
)

// VersionLabel carries the cnbench version an image was made of.
const VersionLabel = "io.cnbench.version"

// Build makes the image of s: its root file system as the one layer, its
// command and environment in the configuration, for this machine's
// platform (the executables in it are this machine's).
func Build(s Spec) (v1.Image, error) {
	rootfs, err := s.RootFS()
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = runtime.GOOS, runtime.GOARCH
	cf.Config.Cmd = s.Command()
	cf.Config.Env = append([]string{"PATH=/usr/bin:/bin"}, s.Env...)
	cf.Config.Labels = map[string]string{VersionLabel: version.Version}
	return mutate.ConfigFile(img, cf)
}

// WriteArchive writes img, named tag, as an image archive (the layout of
// `docker save`), which `docker load`, `ctr images import` and the
// loaders of kind and k3s all read.
//
// Equivalent to: docker save TAG -o PATH
func WriteArchive(path, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("image name %q: %w", tag, err)
	}
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		return fmt.Errorf("write image archive %s: %w", path, err)
	}
	return nil
}

// Push uploads img to the registry ref names, with the credentials
// `docker login` left (~/.docker/config.json) where it needs any.
//
// Equivalent to: docker push REF
func Push(ctx context.Context, ref string, img v1.Image) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", r, err)
	}
	return nil
}

// LoadContainerd imports an image archive into the containerd whose
// socket is address, in its namespace (k8s.io is the one kubelet's CRI
// reads), with containerd's own client.
//
// Equivalent to: ctr --address ADDRESS -n NAMESPACE images import PATH
func LoadContainerd(ctx context.Context, address, namespace, path string) error {
	if _, err := os.Stat(address); err != nil {
		return fmt.Errorf("no containerd at %s: %w", address, err)
	}
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		return fmt.Errorf("load into containerd: ctr, containerd's client, is not installed: %w", err)
	}
	out, err := exec.CommandContext(ctx, ctr, "--address", address, "--namespace", namespace, "images", "import", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import into %s (namespace %s): %w: %s", address, namespace, err, bytes.TrimSpace(out))
	}
	return nil
}
