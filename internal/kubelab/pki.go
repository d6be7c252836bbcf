package kubelab

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// pki is the lab's trust: a CA that signs the API server's serving
// certificate (and whose certificate pods find in kube-root-ca.crt), the
// service-account signing key, and the bearer tokens every client
// authenticates with (kube-apiserver --token-auth-file).
type pki struct {
	dir        string
	caPEM      []byte
	adminToken string
	// nodeTokens are the kubelets' tokens by node name.
	nodeTokens map[string]string
	proxyToken string
	// userTokens are LimitedUsers'.
	userTokens []string
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// newPKI makes the keys, certificates and tokens in dir.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("kubelab keys: %w", err)
	}
	p := &pki{dir: dir, nodeTokens: map[string]string{}, adminToken: randomToken(), proxyToken: randomToken()}
	for range LimitedUsers {
		p.userTokens = append(p.userTokens, randomToken())
	}
	caKey, caCert, err := p.makeCA()
	if err != nil {
		return nil, err
	}
	if err := p.makeServing(caKey, caCert); err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	return p, errors.Join(writeKey(p.path("sa.key"), saKey), writePEM(p.path("sa.pub"), "PUBLIC KEY", pub))
}

// makeCA makes and writes the self-signed CA.
func (p *pki) makeCA() (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cnbench kubelab CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("kubelab CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return key, cert, os.WriteFile(p.path("ca.crt"), p.caPEM, 0o644)
}

// makeServing makes the API server's certificate, valid for every name
// and address a client inside or outside the cluster reaches it by.
func (p *pki) makeServing(caKey *ecdsa.PrivateKey, ca *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{ControlPlaneAddr.AsSlice(), KubernetesServiceIP().AsSlice(), net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("kubelab serving certificate: %w", err)
	}
	return errors.Join(writePEM(p.path("apiserver.crt"), "CERTIFICATE", der), writeKey(p.path("apiserver.key"), key))
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

func randomToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// writeTokens writes the API server's token file: the admin (in
// system:masters), each kubelet as its node, kube-proxy, and
// LimitedUsers in no group.
func (p *pki) writeTokens(nodes []Node) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s,admin,admin,system:masters\n", p.adminToken)
	for i, user := range LimitedUsers {
		fmt.Fprintf(&b, "%s,%s,%s\n", p.userTokens[i], user, user)
	}
	fmt.Fprintf(&b, "%s,system:kube-proxy,kube-proxy,system:node-proxier\n", p.proxyToken)
	for _, n := range nodes {
		tok := randomToken()
		p.nodeTokens[n.Name] = tok
		fmt.Fprintf(&b, "%s,system:node:%s,%s,system:nodes\n", tok, n.Name, n.Name)
	}
	return os.WriteFile(p.path("tokens.csv"), []byte(b.String()), 0o600)
}

// writeKubeconfig writes a kubeconfig for server with a bearer token,
// trusting the lab's CA.
func (p *pki) writeKubeconfig(path string, server netip.AddrPort, token string) error {
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubelab
  cluster:
    server: https://%s
    certificate-authority-data: %s
users:
- name: kubelab
  user:
    token: %s
contexts:
- name: kubelab
  context:
    cluster: kubelab
    user: kubelab
current-context: kubelab
`, server, base64.StdEncoding.EncodeToString(p.caPEM), token)
	return os.WriteFile(path, []byte(conf), 0o600)
}
