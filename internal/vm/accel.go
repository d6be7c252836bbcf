package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"cnbench/internal/netns"
)

// kvmProbeTimeout bounds the probe boot under KVM; where KVM works a
// guest answers within a second or two.
const kvmProbeTimeout = 12 * time.Second

// probeCacheFile remembers the probe's verdict until the machine reboots
// (it lives on /run) or the emulator or guest kernel change.
var probeCacheFile = "/run/cnbench/vm-accel"

var (
	accelOnce   sync.Once
	accelResult string
	accelReason string
)

// Accelerator says how this machine runs guests: KVM where /dev/kvm
// opens and a guest booted with it answers in time, TCG (qemu's software
// emulation) otherwise, with the reason. A present /dev/kvm is not
// enough: under nested virtualisation, KVM guests may hang, so the only
// honest test is a boot. The verdict is kept for the process and, keyed
// by boot, emulator and kernel, in probeCacheFile. token is the run's.
func Accelerator(token netns.Token, binary, imageDir string) (accel, reason string) {
	accelOnce.Do(func() { accelResult, accelReason = probeAccel(token, binary, imageDir) })
	return accelResult, accelReason
}

func probeAccel(token netns.Token, binary, imageDir string) (string, string) {
	if err := kvmOpens(); err != nil {
		return TCG, err.Error()
	}
	key := probeKey()
	if data, err := os.ReadFile(probeCacheFile); err == nil {
		if k, verdict, ok := strings.Cut(strings.TrimSpace(string(data)), "\t"); ok && k == key {
			acc, why, _ := strings.Cut(verdict, "\t")
			return acc, firstLine(why)
		}
	}
	acc, why := TCG, ""
	ctx, cancel := context.WithTimeout(context.Background(), kvmProbeTimeout+5*time.Second)
	defer cancel()
	// A guest without a NIC: it can reach nothing, wherever it runs. Its
	// directory carries the run's token, so a sweep finds it.
	g, err := Boot(ctx, nil, token, "vmprobe", nil, "", Config{Binary: binary, ImageDir: imageDir, Accel: KVM, BootTimeout: kvmProbeTimeout})
	if err == nil {
		acc = KVM
		why = fmt.Sprintf("a KVM guest answered in %v", g.BootTime.Round(time.Millisecond))
		g.Close()
	} else {
		why = fmt.Sprintf("/dev/kvm is present but a KVM guest did not answer: %v", firstLine(err.Error()))
	}
	if key != "" {
		_ = os.MkdirAll(filepath.Dir(probeCacheFile), 0o755)
		_ = os.WriteFile(probeCacheFile, []byte(key+"\t"+acc+"\t"+why+"\n"), 0o644)
	}
	return acc, why
}

// kvmOpens checks that /dev/kvm opens and speaks the stable API.
func kvmOpens() error {
	fd, err := unix.Open("/dev/kvm", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("/dev/kvm: %w", err)
	}
	defer unix.Close(fd)
	const kvmGetAPIVersion = 0xAE00
	v, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), kvmGetAPIVersion, 0)
	if errno != 0 || v != 12 {
		return fmt.Errorf("/dev/kvm: unexpected API version %d (%v)", v, errno)
	}
	return nil
}

// probeKey identifies the boot, the emulator and the guest kernel; empty
// when one of them cannot be told.
func probeKey() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	k, err := FindKernel()
	if err != nil {
		return ""
	}
	q, err := exec.LookPath(qemuBinary)
	if err != nil {
		return ""
	}
	st, err := os.Stat(q)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s|%s|%d|%s", strings.TrimSpace(string(boot)), q, st.ModTime().Unix(), k.Version)
}

// firstLine shortens an error to a reason: its first line, without the
// guest's console and its terminal control codes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s, _, _ = strings.Cut(s, "; guest console:")
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
