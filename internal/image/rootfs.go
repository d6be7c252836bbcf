// Package image is cnbench's container image, made from this machine's
// files with no registry and no base image: a root file system holding
// the cnbench executable, the tools it drives where they are asked for and
// installed, and the shared libraries and loader they link against. The
// docker modes import it into their private daemons; `cnbench image`
// writes it as an image archive that Docker and containerd load, or
// pushes it to a registry, for clusters to run.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"cnbench/internal/selfexe"
	"cnbench/internal/version"
)

// Tag is the name of cnbench's image: one per version, so an image left
// by another build is never taken for this one's.
func Tag() string {
	return "cnbench:" + strings.Trim(invalidTag.ReplaceAllString(version.Version, "_"), ".-")
}

var invalidTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// Spec says what goes into the image.
type Spec struct {
	// Binary is copied to /cnbench; default: this executable.
	Binary string
	// Cmd is the image's command; default: sleep infinity. The main
	// process only holds the container's namespaces, as Kubernetes' pause
	// container does; the engines are started in its network namespace.
	Cmd []string
	// Env is the image's environment.
	Env []string
	// Tools are copied to /usr/bin with the shared libraries they need,
	// when this machine has them.
	Tools []string
}

// Command is the image's command.
func (s Spec) Command() []string {
	if len(s.Cmd) > 0 {
		return s.Cmd
	}
	return []string{"/bin/sleep", "infinity"}
}

// Found are the spec's tools this machine has, and Missing the others.
func (s Spec) Found() (found, missing []string) {
	for _, tool := range s.Tools {
		if _, err := exec.LookPath(tool); err == nil {
			found = append(found, tool)
		} else {
			missing = append(missing, tool)
		}
	}
	return found, missing
}

// RootFS packs the image's root file system as a tar archive: cnbench's
// binary (for docker exec), sleep as the main process, the tools, and the
// shared libraries and loader they link against.
func (s Spec) RootFS() ([]byte, error) {
	bin := s.Binary
	if bin == "" {
		bin = selfexe.File()
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
