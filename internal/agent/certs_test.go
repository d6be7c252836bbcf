package agent_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"cnbench/internal/agent"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestInit checks what `cnbench agent init` writes: a CA that signs only
// leaves, an agent certificate for server use naming the given hosts, a
// controller certificate for client use, keys readable by their owner
// alone, and a second agent under the same CA.
func TestInit(t *testing.T) {
	dir := t.TempDir()
	first, err := agent.Init(dir, "lab1", []string{"198.18.200.1", "lab1.example"})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.New) != 6 {
		t.Errorf("first init wrote %v, want the CA, the controller's and the agent's pairs", first.New)
	}
	second, err := agent.Init(dir, "lab2", []string{"198.18.200.2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.New) != 2 {
		t.Errorf("second init wrote %v, want only the new agent's pair", second.New)
	}
	ca := readCert(t, first.CA)
	if !ca.IsCA || !ca.MaxPathLenZero {
		t.Error("the CA may sign other CAs")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, c := range []struct {
		path  string
		usage x509.ExtKeyUsage
		name  string
	}{
		{first.Agent, x509.ExtKeyUsageServerAuth, "198.18.200.1"},
		{first.Agent, x509.ExtKeyUsageServerAuth, "lab1.example"},
		{second.Agent, x509.ExtKeyUsageServerAuth, "198.18.200.2"},
		{first.Controller, x509.ExtKeyUsageClientAuth, ""},
	} {
		cert := readCert(t, c.path)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: c.name, KeyUsages: []x509.ExtKeyUsage{c.usage}}); err != nil {
			t.Errorf("%s for %q: %v", c.path, c.name, err)
		}
	}
	if _, err := readCert(t, first.Controller).Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("the controller's certificate passes for a server's")
	}
	if _, err := readCert(t, second.Agent).Verify(x509.VerifyOptions{Roots: pool, DNSName: "198.18.200.1"}); err == nil {
		t.Error("lab2's certificate passes for lab1's address")
	}
	keys, _ := filepath.Glob(filepath.Join(dir, "*-key.pem"))
	if len(keys) != 4 {
		t.Errorf("keys %v, want 4", keys)
	}
	for _, k := range keys {
		if st, err := os.Stat(k); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", k, st.Mode().Perm())
		}
	}
	for _, bad := range []string{"ca", "controller", "../x", ""} {
		if _, err := agent.Init(dir, bad, []string{"198.18.200.3"}); err == nil {
			t.Errorf("init accepted the agent name %q", bad)
		}
	}
}
