package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/image"

	"cnbench/internal/version"
)

// ImageSpec says what goes into the image cnbench builds for its
// containers: no registry is needed, the image is made from files of
// this machine.
type ImageSpec struct {
	// Binary is copied to /cnbench and started as the container's main
	// process; default: this executable.
	Binary string
	// Cmd is the container's command; default: sleep infinity. The main
	// process only holds the container's namespaces, as Kubernetes' pause
	// container does; the engines are started in its network namespace.
	Cmd []string
	// Env is the container's environment.
	Env []string
	// Tools are copied with the shared libraries they need, when this
	// machine has them.
	Tools []string
}

// EndpointImage is the image every docker mode uses. Tests replace it.
var EndpointImage = ImageSpec{Tools: []string{"iperf3", "sockperf"}}

// ImageTag is the name of cnbench's image: one per version, so an image
// left by another build is never taken for this one's.
func ImageTag() string {
	return "cnbench:" + strings.Trim(invalidTag.ReplaceAllString(version.Version, "_"), ".-")
}

var invalidTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// command is the container command of the spec.
func (s ImageSpec) command() []string {
	if len(s.Cmd) > 0 {
		return s.Cmd
	}
	return []string{"/bin/sleep", "infinity"}
}

// rootfs packs the image's root file system as a tar archive: cnbench's
// binary (for docker exec), sleep as the main process, the tools, and the
// shared libraries and loader they link against.
func (s ImageSpec) rootfs() ([]byte, error) {
	bin := s.Binary
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for the image: %w", err)
		}
		bin = self
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return nil, fmt.Errorf("the image's main process: %w", err)
	}
	if sleep, err = filepath.EvalSymlinks(sleep); err != nil {
		return nil, fmt.Errorf("the image's main process: %w", err)
	}
	files := map[string]string{"/cnbench": bin, "/bin/sleep": sleep} // path in image -> path here
	deps := []string{bin, sleep}
	for _, tool := range s.Tools {
		if p, err := exec.LookPath(tool); err == nil {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue
			}
			files["/usr/bin/"+tool] = real
			deps = append(deps, real)
		}
	}
	for _, d := range deps {
		libs, err := sharedLibraries(d)
		if err != nil {
			return nil, err
		}
		for _, l := range libs {
			files[l] = l
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := addDirs(tw, dirs, filepath.Dir(p)); err != nil {
			return nil, err
		}
		if err := addFile(tw, p, files[p]); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"/tmp", "/etc"} {
		if err := addDirs(tw, dirs, d); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addDirs(tw *tar.Writer, done map[string]bool, dir string) error {
	if dir == "/" || done[dir] {
		return nil
	}
	if err := addDirs(tw, done, filepath.Dir(dir)); err != nil {
		return err
	}
	done[dir] = true
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755})
}

// addFile stores the file at src, following symbolic links, as name.
func addFile(tw *tar.Writer, name, src string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("image file %s: %w", src, err)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(name, "/"), Mode: 0o755, Size: int64(len(data))}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = tw.Write(data)
	return err
}

var lddPath = regexp.MustCompile(`(?m)(?:=> )?(/\S+) \(0x`)

// sharedLibraries lists the absolute paths of the libraries and the loader
// a dynamically linked program needs; none for a static one.
//
// Equivalent to: ldd PROGRAM
func sharedLibraries(program string) ([]string, error) {
	out, err := exec.Command("ldd", program).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("not a dynamic executable")) {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %w: %s", program, err, bytes.TrimSpace(out))
	}
	var libs []string
	for _, m := range lddPath.FindAllSubmatch(out, -1) {
		libs = append(libs, string(m[1]))
	}
	return libs, nil
}

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
	rootfsOnce.Do(func() { rootfsData, rootfsErr = EndpointImage.rootfs() })
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
