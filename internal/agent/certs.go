package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Files that Init writes in its directory. The CA's key never has to leave
// the machine that ran Init; an agent machine needs ca.pem and its own
// NAME.pem and NAME-key.pem, the controller ca.pem, controller.pem and
// controller-key.pem.
const (
	CAFile            = "ca.pem"
	CAKeyFile         = "ca-key.pem"
	ControllerFile    = "controller.pem"
	ControllerKeyFile = "controller-key.pem"
)

// certValidity is how long Init's certificates last; a benchmark set-up
// that outlives it runs Init again.
const certValidity = 2 * 365 * 24 * time.Hour

// Issued lists the files Init wrote or kept.
type Issued struct {
	CA, CAKey, Controller, ControllerKey, Agent, AgentKey string
	// New lists the files this call created; the others existed already.
	New []string
}

var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// Init makes, in dir, cnbench's own certificate authority and a
// controller client certificate when they are missing, and a server
// certificate for the agent called name whose subject alternative names
// are hosts (addresses or host names the controller dials). Running it
// again for another agent reuses the CA, so every agent and the
// controller trust one another and nothing else.
func Init(dir, name string, hosts []string) (Issued, error) {
	if !agentName.MatchString(name) {
		return Issued{}, fmt.Errorf("agent init: name %q: use 1 to 63 characters from A-Z a-z 0-9 _ . -", name)
	}
	if name == "ca" || name == "controller" {
		return Issued{}, fmt.Errorf("agent init: name %q is taken by the CA's or the controller's files", name)
	}
	if len(hosts) == 0 {
		return Issued{}, errors.New("agent init: give at least one address or host name the controller dials the agent at")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Issued{}, fmt.Errorf("agent init: %w", err)
	}
	is := Issued{
		CA: filepath.Join(dir, CAFile), CAKey: filepath.Join(dir, CAKeyFile),
		Controller: filepath.Join(dir, ControllerFile), ControllerKey: filepath.Join(dir, ControllerKeyFile),
		Agent: filepath.Join(dir, name+".pem"), AgentKey: filepath.Join(dir, name+"-key.pem"),
	}
	ca, caKey, err := loadOrCreateCA(&is)
	if err != nil {
		return Issued{}, fmt.Errorf("agent init: %w", err)
	}
	if !exists(is.Controller) {
		tmpl := leafTemplate("cnbench controller", x509.ExtKeyUsageClientAuth)
		if err := issue(tmpl, ca, caKey, is.Controller, is.ControllerKey); err != nil {
			return Issued{}, fmt.Errorf("agent init: controller certificate: %w", err)
		}
		is.New = append(is.New, is.Controller, is.ControllerKey)
	}
	tmpl := leafTemplate("cnbench agent "+name, x509.ExtKeyUsageServerAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if err := issue(tmpl, ca, caKey, is.Agent, is.AgentKey); err != nil {
		return Issued{}, fmt.Errorf("agent init: certificate of agent %s: %w", name, err)
	}
	is.New = append(is.New, is.Agent, is.AgentKey)
	return is, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func loadOrCreateCA(is *Issued) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	if exists(is.CA) || exists(is.CAKey) {
		pair, err := tls.LoadX509KeyPair(is.CA, is.CAKey)
		if err != nil {
			return nil, nil, fmt.Errorf("load the existing CA: %w", err)
		}
		key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
		if !ok {
			return nil, nil, fmt.Errorf("the CA key in %s is not an ECDSA key", is.CAKey)
		}
		cert, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return nil, nil, fmt.Errorf("parse the existing CA: %w", err)
		}
		return cert, key, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "cnbench CA", Organization: []string{"cnbench"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Only leaves below it: a stolen leaf key cannot mint certificates.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePair(der, key, is.CA, is.CAKey); err != nil {
		return nil, nil, err
	}
	is.New = append(is.New, is.CA, is.CAKey)
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func leafTemplate(cn string, usage x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"cnbench"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

func issue(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	return writePair(der, key, certPath, keyPath)
}

// writePair writes a certificate (readable by all) and its key (by the
// owner only).
func writePair(der []byte, key *ecdsa.PrivateKey, certPath, keyPath string) error {
	certPEM, keyPEM, err := pemPair(der, key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(certPath, certPEM, 0o644)
}

func pemPair(der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// Ephemeral is a certificate authority made for one case and forgotten
// after it, for agents that a controller deploys itself, such as inside a
// cluster's containers: nothing but that case's agents and controller
// ever trusts it.
type Ephemeral struct {
	// CA, Cert and Key are PEM files for the agents: the CA, and a
	// server certificate for the hosts Ephemeral was made for.
	CA, Cert, Key []byte
	// Client is the controller's side.
	Client tls.Certificate
	pool   *x509.CertPool
}

// NewEphemeral makes a CA, a server certificate valid for hosts and a
// client certificate, all in memory, valid for a day.
func NewEphemeral(hosts []string) (*Ephemeral, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "cnbench case CA", Organization: []string{"cnbench"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(cn string, usage x509.ExtKeyUsage, hosts []string) ([]byte, []byte, error) {
		tmpl := leafTemplate(cn, usage)
		tmpl.NotAfter = ca.NotAfter
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		return pemPair(der, key)
	}
	e := &Ephemeral{pool: x509.NewCertPool()}
	e.pool.AddCert(ca)
	e.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if e.Cert, e.Key, err = leaf("cnbench case agent", x509.ExtKeyUsageServerAuth, hosts); err != nil {
		return nil, err
	}
	clientCert, clientKey, err := leaf("cnbench case controller", x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return nil, err
	}
	if e.Client, err = tls.X509KeyPair(clientCert, clientKey); err != nil {
		return nil, err
	}
	return e, nil
}

// ClientTLS is the controller's side for an agent at serverName.
func (e *Ephemeral) ClientTLS(serverName string) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{e.Client}, RootCAs: e.pool, ServerName: serverName,
		MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}}
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	return n
}

// Credentials are the files one side of a connection presents and trusts.
type Credentials struct {
	CA, Cert, Key string
}

func (c Credentials) load() (tls.Certificate, *x509.CertPool, error) {
	pair, err := tls.LoadX509KeyPair(c.Cert, c.Key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("load certificate %s with key %s: %w", c.Cert, c.Key, err)
	}
	data, err := os.ReadFile(c.CA)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("read CA %s: %w", c.CA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return tls.Certificate{}, nil, fmt.Errorf("read CA %s: no PEM certificate in it", c.CA)
	}
	return pair, pool, nil
}

// ServerTLS is the agent's side: it presents its certificate and admits
// only clients whose certificate the CA signed for client use.
func (c Credentials) ServerTLS() (*tls.Config, error) {
	pair, pool, err := c.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{"h2"},
	}, nil
}

// ClientTLS is the controller's side: it presents its certificate and
// accepts only an agent whose certificate the CA signed for serverName.
func (c Credentials) ClientTLS(serverName string) (*tls.Config, error) {
	pair, pool, err := c.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{"h2"},
	}, nil
}
