package scenario

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"cnbench/internal/inputfile"
)

// maxCredentialSize bounds a certificate or key file; real ones are a few
// kilobytes.
const maxCredentialSize = 1 << 20

// checkCredentials reads the CA, certificate and key files a hosts entry
// or the swarm section names, so that a missing, unreadable or mismatched
// one is bad input found at load time, not a failed case after the
// networks were built: each is reported at its field, naming the file
// and, inside it, the line of the PEM block at fault.
func (p *parser) checkCredentials(f map[string]field, ca, cert, key string) {
	caPEM := p.readCredential(f["ca"], ca, "CERTIFICATE")
	certPEM := p.readCredential(f["cert"], cert, "CERTIFICATE")
	keyPEM := p.readCredential(f["key"], key, "PRIVATE KEY")
	if caPEM != nil && !x509.NewCertPool().AppendCertsFromPEM(caPEM) {
		p.report(f["ca"].value, f["ca"].path, fmt.Sprintf("%s: no certificate a pool of trusted CAs can take", ca))
	}
	if certPEM == nil || keyPEM == nil {
		return
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		p.report(f["key"].value, f["key"].path, fmt.Sprintf("%s does not go with the certificate %s: %v", key, cert, err))
	}
}

// readCredential reads one PEM file and checks every block of the kind
// wanted in it; nil when it cannot be used (and reported).
func (p *parser) readCredential(fd field, path, want string) []byte {
	if fd.value == nil || path == "" {
		return nil
	}
	data, err := inputfile.Read(path, maxCredentialSize)
	if err != nil {
		p.report(fd.value, fd.path, err.Error())
		return nil
	}
	if msg := checkPEM(path, data, want); msg != "" {
		p.report(fd.value, fd.path, msg)
		return nil
	}
	return data
}

// checkPEM says what is wrong with a PEM file that should hold blocks of
// the kind wanted ("CERTIFICATE", or a "... PRIVATE KEY"), with the line
// of the block at fault; empty when nothing is.
func checkPEM(path string, data []byte, want string) string {
	found := 0
	for rest := data; ; {
		at := len(data) - len(rest) + max(bytes.Index(rest, []byte("-----BEGIN")), 0)
		block, next := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = next
		line := bytes.Count(data[:at], []byte("\n")) + 1
		if !strings.HasSuffix(block.Type, want) {
			continue
		}
		found++
		var err error
		switch {
		case want == "CERTIFICATE":
			_, err = x509.ParseCertificate(block.Bytes)
		case block.Type == "RSA PRIVATE KEY":
			_, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case block.Type == "EC PRIVATE KEY":
			_, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			_, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		}
		if err != nil {
			return fmt.Sprintf("%s:%d: %s: %v", path, line, block.Type, err)
		}
	}
	if found == 0 {
		return fmt.Sprintf("%s: no PEM block of a %s (expected -----BEGIN %s-----)", path, strings.ToLower(want), want)
	}
	return ""
}
