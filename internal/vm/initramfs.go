package vm

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Paths inside the guest.
const (
	guestBinary     = "/bin/cnbench"
	guestModuleDir  = "/lib/cnbench-modules"
	guestModuleList = "/etc/cnbench/modules"
)

// initScript is the guest's /init. Busybox's shell runs its own applets
// before anything on $PATH, so cnbench is called by its full path.
const initScript = `#!/bin/busybox sh
export PATH=/bin LD_LIBRARY_PATH=%s
exec ` + guestBinary + ` guest-agent
`

// Image is a built initramfs.
type Image struct {
	Path   string
	Kernel Kernel
}

var (
	imageMu    sync.Mutex
	imageCache = map[string]*Image{}
)

// BuildImage makes the guest's initramfs, or returns the one already made
// from the same contents: busybox, the cnbench executable binary (with its
// loader and libraries if it is linked dynamically), and the guest
// modules with their dependencies, in load order. The image is an
// uncompressed newc cpio archive: under emulation, decompressing costs the
// guest more than copying. It is stored in dir as initramfs-HASH.cpio,
// HASH being that of its contents, so a changed binary never boots a stale
// image.
func BuildImage(dir, binary string) (*Image, error) {
	k, err := FindKernel()
	if err != nil {
		return nil, err
	}
	busybox, err := findBusybox()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("build guest image: %w", err)
	}
	modules, err := moduleFiles(k, dir, guestModules())
	if err != nil {
		return nil, err
	}
	var libs []string
	for _, exe := range []string{binary, busybox} {
		l, err := sharedObjects(exe)
		if err != nil {
			return nil, fmt.Errorf("build guest image: %w", err)
		}
		libs = append(libs, l...)
	}
	init := fmt.Sprintf(initScript, strings.Join(libraryDirs, ":"))

	files := map[string]string{guestBinary: binary, "/bin/busybox": busybox}
	for _, l := range libs {
		files[l] = l
	}
	var order []string
	for _, m := range modules {
		dst := path.Join(guestModuleDir, filepath.Base(m))
		files[dst] = m
		order = append(order, dst)
	}
	key, err := contentKey(k, init, order, files)
	if err != nil {
		return nil, err
	}
	imageMu.Lock()
	defer imageMu.Unlock()
	if img, ok := imageCache[key]; ok {
		if _, err := os.Stat(img.Path); err == nil {
			return img, nil
		}
	}
	img := &Image{Path: filepath.Join(dir, "initramfs-"+key[:16]+".cpio"), Kernel: k}
	if _, err := os.Stat(img.Path); err != nil {
		if err := writeImage(img.Path, init, strings.Join(order, "\n")+"\n", files); err != nil {
			return nil, err
		}
	}
	imageCache[key] = img
	return img, nil
}

// findBusybox returns busybox, preferring busybox-static's.
func findBusybox() (string, error) {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("busybox"); err == nil {
		return p, nil
	}
	return "", errors.New("busybox is not installed (bash scripts/setup.sh installs busybox-static)")
}

// contentKey hashes everything that goes into an image.
func contentKey(k Kernel, init string, order []string, files map[string]string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "kernel %s\ninit %q\nmodules %q\n", k.Version, init, order)
	for _, dst := range sortedKeys(files) {
		f, err := os.Open(files[dst])
		if err != nil {
			return "", fmt.Errorf("build guest image: %w", err)
		}
		fmt.Fprintf(h, "file %s\n", dst)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("build guest image: read %s: %w", files[dst], err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeImage writes the archive to a temporary name and renames it into
// place, so a reader never sees half an image.
func writeImage(dst, init, moduleList string, files map[string]string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".initramfs-*")
	if err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	c := &cpioWriter{w: bw}
	dirs := map[string]bool{}
	mkdirs := func(p string) error {
		var parents []string
		for d := path.Dir(p); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			dirs[parents[i]] = true
			if err := c.dir(parents[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range []string{"/dev/x", "/proc/x", "/sys/x", "/run/x", "/tmp/x", "/var/run/netns/x", "/etc/cnbench/x"} {
		if err := mkdirs(d); err != nil {
			return fmt.Errorf("build guest image: %w", err)
		}
	}
	if err := c.charDev("/dev/console", 5, 1); err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	if err := c.file("/init", 0o755, int64(len(init)), strings.NewReader(init)); err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	if err := c.file(guestModuleList, 0o644, int64(len(moduleList)), strings.NewReader(moduleList)); err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	for _, dst := range sortedKeys(files) {
		if err := mkdirs(dst); err != nil {
			return fmt.Errorf("build guest image: %w", err)
		}
		if err := addFile(c, dst, files[dst]); err != nil {
			return fmt.Errorf("build guest image: %w", err)
		}
	}
	if err := c.symlink("/bin/sh", "busybox"); err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	if err := c.close(); err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("build guest image: %w", err)
	}
	return nil
}

// addFile copies src, following symbolic links, to dst in the archive.
func addFile(c *cpioWriter, dst, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return c.file(dst, uint32(st.Mode().Perm()), st.Size(), f)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
