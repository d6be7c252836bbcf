package vm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Kernel is a guest kernel with its modules.
type Kernel struct {
	Version string // "6.1.0-56-cloud-amd64"
	Image   string // /boot/vmlinuz-VERSION
	Modules string // /lib/modules/VERSION
}

// kernelFlavour is the Debian kernel flavour cnbench boots: built for
// virtual machines, with virtio, bridge, macvlan and ipvlan as modules.
const kernelFlavour = "-cloud-amd64"

// kernelPackage is the Debian package that ships it.
const kernelPackage = "linux-image-cloud-amd64"

// FindKernel returns the newest installed cloud kernel whose modules are
// installed too.
func FindKernel() (Kernel, error) {
	images, _ := filepath.Glob("/boot/vmlinuz-*" + kernelFlavour)
	slices.SortFunc(images, func(a, b string) int { return compareVersions(b, a) })
	for _, img := range images {
		v := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
		for _, dir := range []string{"/lib/modules/" + v, "/usr/lib/modules/" + v} {
			if _, err := os.Stat(filepath.Join(dir, "kernel")); err == nil {
				return Kernel{Version: v, Image: img, Modules: dir}, nil
			}
		}
	}
	return Kernel{}, fmt.Errorf("no guest kernel: %s is not installed (bash scripts/setup.sh installs it)", kernelPackage)
}

// compareVersions orders kernel file names by their numeric parts.
func compareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' })
	}
	pa, pb := split(a), split(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var na, nb int
		_, ea := fmt.Sscan(pa[i], &na)
		_, eb := fmt.Sscan(pb[i], &nb)
		if ea == nil && eb == nil && na != nb {
			return na - nb
		}
		if c := strings.Compare(pa[i], pb[i]); (ea != nil || eb != nil) && c != 0 {
			return c
		}
	}
	return len(pa) - len(pb)
}

// guestModules are the modules the guest loads at boot: the virtio PCI
// transport, its NIC and its serial ports (cnbench's control channel),
// the links of the modes cnbench builds inside guests (ModeModules), and
// the netlink families its netlink library opens a socket for in every
// namespace.
func guestModules() []string {
	mods := []string{"virtio_pci", "virtio_net", "virtio_console"}
	if ModeModules != nil {
		mods = append(mods, ModeModules()...)
	}
	return append(mods, "xfrm_user", "nfnetlink")
}

// ModeModules lists the modules the links of the modes built inside
// guests need, as the mode table says; the table (package modes), which
// imports this package, sets it.
var ModeModules func() []string

// moduleFiles resolves modules and their dependencies to module files, in
// the order they must be loaded. Debian's kernel package ships no
// modules.dep (its postinst makes one), so when there is none cnbench
// makes its own with depmod in scratch, a directory whose kernel/ tree
// links to the real one.
//
// Equivalent to: depmod -b SCRATCH VERSION; modprobe -d SCRATCH -S VERSION --show-depends MODULE
func moduleFiles(k Kernel, scratch string, modules []string) ([]string, error) {
	base := "/"
	if _, err := os.Stat(filepath.Join(k.Modules, "modules.dep")); err != nil {
		base = filepath.Join(scratch, "depmod")
		dir := filepath.Join(base, "lib", "modules", k.Version)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("resolve guest modules: %w", err)
		}
		if err := os.Symlink(filepath.Join(k.Modules, "kernel"), filepath.Join(dir, "kernel")); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("resolve guest modules: %w", err)
		}
		for _, f := range []string{"modules.builtin", "modules.builtin.modinfo", "modules.order"} {
			if data, err := os.ReadFile(filepath.Join(k.Modules, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
					return nil, fmt.Errorf("resolve guest modules: %w", err)
				}
			}
		}
		if out, err := exec.Command("depmod", "-b", base, k.Version).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("depmod -b %s %s: %w: %s", base, k.Version, err, bytes.TrimSpace(out))
		}
	}
	var files []string
	for _, m := range modules {
		out, err := exec.Command("modprobe", "-d", base, "-S", k.Version, "--show-depends", m).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("modprobe --show-depends %s for kernel %s: %w: %s", m, k.Version, err, bytes.TrimSpace(out))
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			// "builtin NAME" needs nothing; "insmod PATH [OPTIONS]" a file.
			if len(f) < 2 || f[0] != "insmod" {
				continue
			}
			path := f[1]
			if base != "/" {
				rel, err := filepath.Rel(filepath.Join(base, "lib", "modules", k.Version), path)
				if err != nil {
					return nil, fmt.Errorf("resolve module %s: %w", path, err)
				}
				path = filepath.Join(k.Modules, rel)
			}
			if !slices.Contains(files, path) {
				files = append(files, path)
			}
		}
	}
	return files, nil
}

// sharedObjects lists what a dynamically linked executable needs at run
// time: its interpreter and the libraries it names, found where the
// dynamic loader looks on Debian. A static executable needs nothing.
//
// Equivalent to: ldd EXECUTABLE
func sharedObjects(path string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(string, bool) error
	visit = func(p string, top bool) error {
		f, err := elf.Open(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		defer f.Close()
		if top {
			for _, prog := range f.Progs {
				if prog.Type != elf.PT_INTERP {
					continue
				}
				data := make([]byte, prog.Filesz)
				if _, err := prog.ReadAt(data, 0); err != nil {
					return fmt.Errorf("read interpreter of %s: %w", p, err)
				}
				interp := strings.TrimRight(string(data), "\x00")
				if !seen[interp] {
					seen[interp] = true
					out = append(out, interp)
				}
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("read libraries of %s: %w", p, err)
		}
		for _, lib := range libs {
			found := ""
			for _, dir := range libraryDirs {
				if _, err := os.Stat(filepath.Join(dir, lib)); err == nil {
					found = filepath.Join(dir, lib)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, found in none of %s", p, lib, strings.Join(libraryDirs, ", "))
			}
			if seen[found] {
				continue
			}
			seen[found] = true
			out = append(out, found)
			if err := visit(found, false); err != nil {
				return err
			}
		}
		return nil
	}
	return out, visit(path, true)
}

// libraryDirs are where the guest's dynamic loader finds libraries; the
// guest's init sets LD_LIBRARY_PATH to them.
var libraryDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib", "/usr/lib"}
