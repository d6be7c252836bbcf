package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"cnbench/internal/agent"
	"cnbench/internal/image"
)

func newImageCommand() *cobra.Command {
	var o imageOptions
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Write cnbench's container image as an archive, load it into containerd, or push it",
		Long: `image makes cnbench's container image from this machine's files: the
cnbench executable and the shared libraries it needs, and with --tools
the external engines its agents start in pods (iperf3, netperf and
netserver, ping, sockperf) with theirs, in one layer, no base image.

Without --load or --push it writes an image archive (the layout of
docker save) to --output: load it with "docker load -i FILE" or
"ctr -n k8s.io images import FILE" on each node, or "kind load
image-archive FILE". --load imports it into a containerd (by default the
machine's, into the k8s.io namespace that kubelet reads); --push uploads
it to a registry, with the credentials docker login left.`,
		Example: `  cnbench image                                  # writes cnbench-image.tar
  cnbench image --tools --output /tmp/cnbench.tar
  cnbench image --load                           # into /run/containerd/containerd.sock, namespace k8s.io
  cnbench image --push registry.example.com/team/cnbench:v1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", `image archive to write (default "cnbench-image.tar" unless --load or --push)`)
	f.StringVar(&o.tag, "tag", "", "the image's name in the archive and in containerd (default cnbench:VERSION)")
	f.BoolVar(&o.tools, "tools", false, "include iperf3, netperf, ping and sockperf, where installed, with their libraries")
	f.BoolVar(&o.load, "load", false, "import the image into a containerd")
	f.StringVar(&o.containerd, "containerd", "/run/containerd/containerd.sock", "the containerd socket --load imports into")
	f.StringVar(&o.namespace, "namespace", "k8s.io", "the containerd namespace --load imports into (kubelet's is k8s.io)")
	f.StringVar(&o.push, "push", "", "push the image to this registry reference (REGISTRY/REPO:TAG)")
	return cmd
}

type imageOptions struct {
	output, tag, push, containerd, namespace string
	load, tools                              bool
}

// run makes the image and writes, loads or pushes it, as the flags ask.
func (o imageOptions) run(cmd *cobra.Command) error {
	if o.tag == "" {
		o.tag = image.Tag()
	}
	if _, err := name.NewTag(o.tag); err != nil {
		return usageError(fmt.Errorf("--tag %q: %v", o.tag, err))
	}
	if o.push != "" {
		if _, err := name.ParseReference(o.push); err != nil {
			return usageError(fmt.Errorf("--push %q: %v", o.push, err))
		}
	}
	spec := image.Spec{}
	out := cmd.OutOrStdout()
	if o.tools {
		spec.Tools = agent.ProgramNames()
		found, missing := spec.Found()
		if len(missing) > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "note: not installed here, so not in the image: %s\n", strings.Join(missing, ", "))
		}
		spec.Tools = found
	}
	img, err := image.Build(spec)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if o.output == "" && !o.load && o.push == "" {
		o.output = "cnbench-image.tar"
	}
	archive := o.output
	if archive == "" && o.load {
		dir, err := os.MkdirTemp("", "cnbench-image-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		archive = filepath.Join(dir, "cnbench-image.tar")
	}
	if archive != "" {
		if err := image.WriteArchive(archive, o.tag, img); err != nil {
			return err
		}
		if o.output != "" {
			size := int64(0)
			if fi, err := os.Stat(o.output); err == nil {
				size = fi.Size()
			}
			fmt.Fprintf(out, "wrote %s: %s (%s, %.1f MB)\n", o.output, o.tag, digest, float64(size)/1e6)
		}
	}
	if o.load {
		if err := image.LoadContainerd(cmd.Context(), o.containerd, o.namespace, archive); err != nil {
			return err
		}
		fmt.Fprintf(out, "loaded %s into containerd at %s, namespace %s\n", o.tag, o.containerd, o.namespace)
	}
	if o.push != "" {
		if err := image.Push(cmd.Context(), o.push, img); err != nil {
			return err
		}
		fmt.Fprintf(out, "pushed %s (%s)\n", o.push, digest)
	}
	return nil
}
