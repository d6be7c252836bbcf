package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/docker/docker/api/types/image"

	cnimage "cnbench/internal/image"
)

// EndpointImage is the image every docker mode uses. Tests replace it.
var EndpointImage = cnimage.Spec{Tools: []string{"iperf3", "sockperf"}}

// ImageTag is the name of cnbench's image (image.Tag).
func ImageTag() string { return cnimage.Tag() }

var (
	rootfsOnce sync.Once
	rootfsData []byte
	rootfsErr  error
)

// EnsureImage imports cnbench's image into the daemon unless it has it.
// The archive is packed once per process and reused for every daemon.
//
// Equivalent to: tar -C ROOTFS -c . | docker import - cnbench:VERSION
func (d *Daemon) EnsureImage(ctx context.Context) (string, error) {
	tag := ImageTag()
	if _, err := d.Client.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	}
	rootfsOnce.Do(func() { rootfsData, rootfsErr = EndpointImage.RootFS() })
	if rootfsErr != nil {
		return "", rootfsErr
	}
	rc, err := d.Client.ImageImport(ctx, image.ImportSource{Source: bytes.NewReader(rootfsData), SourceName: "-"}, tag, image.ImportOptions{})
	if err != nil {
		return "", fmt.Errorf("import image %s into dockerd in %q: %w", tag, d.NS.Name, err)
	}
	defer rc.Close()
	// The import finishes when its progress stream ends.
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return "", fmt.Errorf("import image %s into dockerd in %q: %w", tag, d.NS.Name, err)
	}
	return tag, nil
}
