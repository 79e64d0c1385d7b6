// Package runca makes a certificate authority for one run: its own CA
// (ECDSA P-256), server certificates for the addresses and host names the
// run's servers answer on, and client certificates, as PEM. Every file is
// written with mode 0600 in a directory of the run's own (0700, inside the
// run's private temporary directory) and removed with it (remove). The
// CA's key never leaves memory: nothing signed after the run can be
// trusted by what it made.
package runca

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

// validity is how long what the CA signs is valid: a run, with room.
const validity = 7 * 24 * time.Hour

// CA is a run's certificate authority.
type CA struct {
	dir     string
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	caFile  string
}

// Pair is a certificate and its key, as PEM and as the files written.
type Pair struct {
	// CertPEM and KeyPEM are the certificate and its key (PKCS #8, which
	// Go, OpenSSL and Java's PEM loaders all read).
	CertPEM, KeyPEM []byte
	// CertFile and KeyFile are where they were written (mode 0600).
	CertFile, KeyFile string
}

// TLSCertificate is the pair for a tls.Config.
func (p Pair) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(p.CertPEM, p.KeyPEM)
}

// New makes a CA whose files go in dir (made with mode 0700 when missing;
// its ca.pem written 0600).
func New(dir string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "locktorture run CA " + serial.Text(16)[:8], Organization: []string{"locktorture"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	ca := &CA{dir: dir, cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	ca.caFile = filepath.Join(dir, "ca.pem")
	if err := write(ca.caFile, ca.certPEM); err != nil {
		return nil, err
	}
	return ca, nil
}

// CAFile is the CA certificate's file (what clients and servers trust).
func (ca *CA) CAFile() string { return ca.caFile }

// CAPEM is the CA certificate, PEM.
func (ca *CA) CAPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// pool is a pool holding only the CA.
func (ca *CA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Server signs a certificate for a server called name (the files'
// names) that answers on hosts: IP addresses and DNS names. Both
// 127.0.0.1 and localhost are always included. It serves as a client
// certificate too (servers of an ensemble dial each other with it).
func (ca *CA) Server(name string, hosts ...string) (Pair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name, Organization: []string{"locktorture"}},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	seen := map[string]bool{}
	for _, h := range append([]string{"127.0.0.1", "localhost"}, hosts...) {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.sign(name, tmpl)
}

// Client signs a client certificate for user (its common name: etcd's
// --client-cert-auth takes the user from it); name names the files.
func (ca *CA) Client(name, user string) (Pair, error) {
	if user == "" {
		return Pair{}, errors.New("runca: a client certificate needs a user")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: []string{"locktorture"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.sign(name, tmpl)
}

// fileName is what a certificate's name may be: it names files in dir.
var fileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// sign completes tmpl with a fresh key, a serial and the validity, signs
// it, and writes name.pem and name-key.pem.
func (ca *CA) sign(name string, tmpl *x509.Certificate) (Pair, error) {
	if !fileName.MatchString(name) || name == "ca" {
		return Pair{}, fmt.Errorf("runca: %q cannot name a certificate's files (letters, digits, . _ -; not ca)", name)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("runca: %w", err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return Pair{}, err
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(validity)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("runca: %s: %w", name, err)
	}
	k8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, fmt.Errorf("runca: %s: %w", name, err)
	}
	p := Pair{
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k8}),
		CertFile: filepath.Join(ca.dir, name+".pem"),
		KeyFile:  filepath.Join(ca.dir, name+"-key.pem"),
	}
	if err := write(p.CertFile, p.CertPEM); err != nil {
		return Pair{}, err
	}
	if err := write(p.KeyFile, p.KeyPEM); err != nil {
		return Pair{}, err
	}
	return p, nil
}

// remove deletes the CA's directory and everything in it.
func (ca *CA) remove() error {
	if err := os.RemoveAll(ca.dir); err != nil {
		return fmt.Errorf("runca: %w", err)
	}
	return nil
}

// newSerial is a random 127-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("runca: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// write writes data to path with mode 0600, whatever the umask, and
// refuses to follow a file someone put there first.
func write(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("runca: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("runca: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("runca: %w", err)
	}
	return nil
}
