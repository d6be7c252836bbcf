package scenario

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestHostsAndSwarmSections(t *testing.T) {
	dir := t.TempDir()
	creds := writeCredentials(t, dir)
	abs := filepath.Join(dir, "abs", "controller-key.pem")
	os.MkdirAll(filepath.Dir(abs), 0o755)
	os.WriteFile(abs, creds.keyPEM, 0o600)
	doc := `modes: host
topologies: chhc
workloads: tcp_stream
hosts:
  h2: {agent: "10.0.0.12:7443", ca: certs/ca.pem, cert: certs/controller.pem, key: ` + abs + `}
  h1: {agent: "lab1.example:7443", ca: certs/ca.pem, cert: certs/controller.pem, key: certs/controller-key.pem}
swarm: {manager: "unix:///run/m.sock", nodes: [node-a, node-b], control_port: 9000}
`
	s, err := Parse(filepath.Join(dir, "s.yaml"), []byte(doc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{
		{Name: "h1", Agent: "lab1.example:7443", CA: creds.ca, Cert: creds.cert, Key: creds.key},
		{Name: "h2", Agent: "10.0.0.12:7443", CA: creds.ca, Cert: creds.cert, Key: abs},
	}
	if !reflect.DeepEqual(s.Hosts, want) {
		t.Errorf("hosts: got %+v, want %+v (sorted, paths from the file's directory)", s.Hosts, want)
	}
	if s.Swarm == nil || s.Swarm.Manager != "unix:///run/m.sock" || !reflect.DeepEqual(s.Swarm.Nodes, []string{"node-a", "node-b"}) || s.Swarm.ControlPort != 9000 {
		t.Errorf("swarm: got %+v", s.Swarm)
	}
	out, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(filepath.Join(t.TempDir(), "x.yaml"), out, testVocab)
	if err != nil {
		t.Fatalf("the stored document does not parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(again.Hosts, s.Hosts) || !reflect.DeepEqual(again.Swarm, s.Swarm) {
		t.Errorf("round trip changed hosts or swarm:\n%s", out)
	}
}

func TestHostsAndSwarmRefused(t *testing.T) {
	base := "modes: host\ntopologies: chhc\nworkloads: tcp_stream\n"
	for _, c := range []struct{ doc, path, msg string }{
		{"hosts: {eth0: {agent: \"a:1\", ca: c, cert: c, key: k}}", "hosts.eth0", "expected h1, h2"},
		{"hosts: {h1: {agent: \"a\", ca: c, cert: c, key: k}}", "hosts.h1.agent", "HOST:PORT"},
		{"hosts: {h1: {agent: \"a:99999\", ca: c, cert: c, key: k}}", "hosts.h1.agent", "out of range"},
		{"hosts: {h1: {agent: \"a:1\", ca: c, cert: c}}", "hosts.h1.key", "missing"},
		{"hosts: {h1: {agent: \"a:1\", ca: c, cert: c, key: k, command: x}}", "hosts.h1.command", "data, never code"},
		{"hosts: [h1]", "hosts", "expected a mapping"},
		{"swarm: {nodes: [a]}", "swarm.manager", "missing"},
		{"swarm: {manager: \"http://x\", nodes: [a]}", "swarm.manager", "unix:///PATH"},
		{"swarm: {manager: \"unix:///s\", nodes: [a, b, c]}", "swarm.nodes", "one or two"},
		{"swarm: {manager: \"unix:///s\", nodes: [a], ca: x}", "swarm", "go together"},
	} {
		_, err := Parse("s.yaml", []byte(base+c.doc+"\n"), testVocab)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error at %s saying %q", c.doc, err, c.path, c.msg)
		}
	}
}

// TestCredentialFilesCheckedAtLoad names CA, certificate and key files
// that cannot be used: each is refused when the scenario is loaded, at
// its field, naming the file and the line of the block at fault.
func TestCredentialFilesCheckedAtLoad(t *testing.T) {
	dir := t.TempDir()
	creds := writeCredentials(t, dir)
	other := writeCredentials(t, filepath.Join(dir, "other"))
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("not a certificate\n"), 0o644)
	broken := filepath.Join(dir, "broken.pem")
	lines := strings.Split(string(creds.certPEM), "\n")
	lines[3] = "AAAA" + lines[3][4:]
	os.WriteFile(broken, []byte("# the controller's certificate\n\n"+strings.Join(lines, "\n")), 0o644)
	base := "modes: host\ntopologies: chhc\nworkloads: tcp_stream\n"
	host := func(ca, cert, key string) string {
		return fmt.Sprintf("hosts: {h1: {agent: \"a:1\", ca: %s, cert: %s, key: %s}}", ca, cert, key)
	}
	for _, c := range []struct{ doc, path, msg string }{
		{host(filepath.Join(dir, "missing.pem"), creds.cert, creds.key), "hosts.h1.ca", "missing.pem: no such file"},
		{host(creds.ca, text, creds.key), "hosts.h1.cert", "notes.txt: no PEM block of a certificate"},
		{host(creds.ca, broken, creds.key), "hosts.h1.cert", "broken.pem:3: CERTIFICATE: x509:"},
		{host(creds.ca, creds.cert, creds.cert), "hosts.h1.key", "no PEM block of a private key"},
		{host(creds.ca, creds.cert, other.key), "hosts.h1.key", "does not go with the certificate"},
		{host(creds.ca, creds.cert, "/dev/zero"), "hosts.h1.key", "not a regular file"},
		{fmt.Sprintf("swarm: {manager: \"tcp://m:2376\", nodes: [a], ca: %s, cert: %s, key: %s}", creds.ca, creds.cert, other.key), "swarm.key", "does not go with"},
	} {
		_, err := Parse(filepath.Join(dir, "s.yaml"), []byte(base+c.doc+"\n"), testVocab)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error at %s saying %q", c.doc, err, c.path, c.msg)
		}
	}
}

type credentials struct {
	ca, cert, key   string
	certPEM, keyPEM []byte
}

// writeCredentials writes a CA certificate and a controller certificate
// and key to dir/certs.
func writeCredentials(t *testing.T, dir string) credentials {
	t.Helper()
	certs := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certs, 0o755); err != nil {
		t.Fatal(err)
	}
	selfSigned := func(name string) ([]byte, []byte) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	}
	caPEM, _ := selfSigned("ca")
	certPEM, keyPEM := selfSigned("controller")
	c := credentials{ca: filepath.Join(certs, "ca.pem"), cert: filepath.Join(certs, "controller.pem"), key: filepath.Join(certs, "controller-key.pem"),
		certPEM: certPEM, keyPEM: keyPEM}
	for path, data := range map[string][]byte{c.ca: caPEM, c.cert: certPEM, c.key: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
