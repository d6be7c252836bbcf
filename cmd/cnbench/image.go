package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"cnbench/internal/image"
)

// imageTools are the external engines --tools puts in the image.
var imageTools = []string{"iperf3", "netperf", "netserver", "sockperf"}

func newImageCommand() *cobra.Command {
	var (
		output, tag, push, containerd, namespace string
		load, tools                              bool
	)
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Write cnbench's container image as an archive, load it into containerd, or push it",
		Long: `image makes cnbench's container image from this machine's files: the
cnbench executable and the shared libraries it needs, and with --tools
iperf3, netperf and sockperf with theirs, in one layer, no base image.

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tag == "" {
				tag = image.Tag()
			}
			if _, err := name.NewTag(tag); err != nil {
				return usageError(fmt.Errorf("--tag %q: %v", tag, err))
			}
			if push != "" {
				if _, err := name.ParseReference(push); err != nil {
					return usageError(fmt.Errorf("--push %q: %v", push, err))
				}
			}
			spec := image.Spec{}
			out := cmd.OutOrStdout()
			if tools {
				spec.Tools = imageTools
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
			if output == "" && !load && push == "" {
				output = "cnbench-image.tar"
			}
			archive := output
			if archive == "" && load {
				dir, err := os.MkdirTemp("", "cnbench-image-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				archive = filepath.Join(dir, "cnbench-image.tar")
			}
			if archive != "" {
				if err := image.WriteArchive(archive, tag, img); err != nil {
					return err
				}
				if output != "" {
					size := int64(0)
					if fi, err := os.Stat(output); err == nil {
						size = fi.Size()
					}
					fmt.Fprintf(out, "wrote %s: %s (%s, %.1f MB)\n", output, tag, digest, float64(size)/1e6)
				}
			}
			if load {
				if err := image.LoadContainerd(cmd.Context(), containerd, namespace, archive); err != nil {
					return err
				}
				fmt.Fprintf(out, "loaded %s into containerd at %s, namespace %s\n", tag, containerd, namespace)
			}
			if push != "" {
				if err := image.Push(cmd.Context(), push, img); err != nil {
					return err
				}
				fmt.Fprintf(out, "pushed %s (%s)\n", push, digest)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "", `image archive to write (default "cnbench-image.tar" unless --load or --push)`)
	f.StringVar(&tag, "tag", "", "the image's name in the archive and in containerd (default cnbench:VERSION)")
	f.BoolVar(&tools, "tools", false, "include iperf3, netperf and sockperf, where installed, with their libraries")
	f.BoolVar(&load, "load", false, "import the image into a containerd")
	f.StringVar(&containerd, "containerd", "/run/containerd/containerd.sock", "the containerd socket --load imports into")
	f.StringVar(&namespace, "namespace", "k8s.io", "the containerd namespace --load imports into (kubelet's is k8s.io)")
	f.StringVar(&push, "push", "", "push the image to this registry reference (REGISTRY/REPO:TAG)")
	return cmd
}
