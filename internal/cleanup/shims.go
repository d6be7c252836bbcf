package cleanup

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"cnbench/internal/netns"
)

// ShimSocketDir is where containerd 1.6's runc shims put their sockets
// whatever containerd's own directories are; a shim removes its socket
// when it exits, but not when it is killed.
const ShimSocketDir = "/run/containerd/s"

// ShimSockets lists the shim sockets a private Docker daemon of cnbench
// whose directory is dir has, or had: containerd names each one by the
// SHA-256 of its own socket's path, the containerd namespace and the
// container's ID, so these names cannot belong to any other containerd.
// The namespace is cnb-TOKEN-ROLE for a directory cnb-TOKEN-dk-ROLE-*, and
// the container IDs are the data root's.
//
// Equivalent to: for ID in DIR/data/containers/*; do
// echo /run/containerd/s/$(printf %s DIR/containerd.sock/cnb-TOKEN-ROLE/$ID | sha256sum); done
func ShimSockets(dir string) []string {
	base := filepath.Base(dir)
	tok := netns.TokenOf(base)
	rest, ok := strings.CutPrefix(base, tok.Name("dk-"))
	i := strings.LastIndexByte(rest, '-')
	if tok == "" || !ok || i <= 0 {
		return nil
	}
	ns := tok.Name(rest[:i])
	ids, _ := os.ReadDir(filepath.Join(dir, "data", "containers"))
	var out []string
	for _, id := range ids {
		sum := sha256.Sum256([]byte(filepath.Join(dir, "containerd.sock", ns, id.Name())))
		out = append(out, filepath.Join(ShimSocketDir, fmt.Sprintf("%x", sum)))
	}
	return out
}

// sweepShimSockets removes the sockets the killed shims of a dead run's
// private daemons left; it must run before their directories go.
func sweepShimSockets(tok netns.Token) error {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tok.Name("dk-")+"*"))
	var errs []error
	for _, dir := range dirs {
		if !IsOwnDir(dir) {
			continue
		}
		for _, sock := range ShimSockets(dir) {
			if st, err := os.Lstat(sock); err == nil && st.Mode().Type() == fs.ModeSocket {
				if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, fmt.Errorf("remove shim socket %s: %w", sock, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}
