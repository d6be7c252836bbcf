package netns

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sysctl sets a networking sysctl inside the namespace. /proc/sys/net
// shows the namespace of the thread that opens it, hence Do.
//
// Equivalent to: ip netns exec NAME sysctl -w KEY=VALUE
func (ns *NS) Sysctl(key, value string) error {
	if !strings.HasPrefix(key, "net.") {
		return fmt.Errorf("sysctl %s: only net.* keys are per namespace", key)
	}
	path := filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
	return ns.Do(func() error {
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl %s=%s in %q: %w", key, value, ns.Name, err)
		}
		return nil
	})
}
