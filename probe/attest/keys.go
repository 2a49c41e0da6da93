package attest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/probectl/probectl/internal/input"
)

// pemType is the PEM block type of a PKCS#8 private key, as openssl writes it.
const pemType = "PRIVATE KEY"

// maxKeyFile bounds what LoadSigner reads: a PEM ed25519 key is about 120 bytes.
const maxKeyFile = 64 << 10

// KeyID names a public key in signing_keys and in envelopes: "ed25519:" and the first 16 hex
// digits of the SHA-256 of the raw public key.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "ed25519:" + hex.EncodeToString(sum[:])[:16]
}

// GenerateKey makes a new signing key pair from the system's secure random source.
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	return pub, priv, nil
}

// InputKeyPath is the private key file a key is written to (CreateKey's path), as a command's
// flag gives it (see internal/input).
const InputKeyPath input.Name = "key_path"

// KeyFileError says a private key file could not be used. It names the file and never its content.
type KeyFileError struct {
	Path string
	Err  error
}

func (e *KeyFileError) Error() string { return fmt.Sprintf("signing key %s: %s", e.Path, e.Err) }

func (e *KeyFileError) Unwrap() error { return e.Err }

// ErrKeyExists says WritePrivateKey found a file already there: keys are never overwritten,
// since the old one may still be the only copy of a key that signed past runs.
var ErrKeyExists = errors.New("file already exists")

// WritePrivateKey writes priv to a new file readable only by its owner (0600), as a PEM "PRIVATE
// KEY" (PKCS#8) block. It refuses to overwrite an existing file.
func WritePrivateKey(path string, priv ed25519.PrivateKey) error {
	if len(priv) != ed25519.PrivateKeySize {
		return &KeyFileError{Path: path, Err: errors.New("not an ed25519 private key")}
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return &KeyFileError{Path: path, Err: fmt.Errorf("encode: %w", err)}
	}
	block := pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: der})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return &KeyFileError{Path: path, Err: input.Errorf("%w; refusing to overwrite a key, choose another %s", ErrKeyExists, InputKeyPath)}
	}
	if err != nil {
		return &KeyFileError{Path: path, Err: err}
	}
	_, werr := f.Write(block)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return &KeyFileError{Path: path, Err: fmt.Errorf("write: %w", werr)}
	}
	return nil
}

// LoadSigner reads a private key written by WritePrivateKey (or `openssl genpkey -algorithm
// ed25519`). A file that group or others may read is refused: a key others could read can sign
// runs that are not ours. The one exception is the file Kubernetes gives a pod that does not run
// as root (see podSecret): root's, readable by the pod's group only.
func LoadSigner(path string) (*Signer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &KeyFileError{Path: path, Err: err}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, &KeyFileError{Path: path, Err: err}
	}
	if !info.Mode().IsRegular() {
		return nil, &KeyFileError{Path: path, Err: errors.New("not a regular file")}
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" && !podSecret(path, info) {
		return nil, &KeyFileError{Path: path, Err: fmt.Errorf(
			"is readable or writable by group or others (mode %04o); run: chmod 600 %s", perm, path)}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, &KeyFileError{Path: path, Err: err}
	}
	if len(data) > maxKeyFile {
		return nil, &KeyFileError{Path: path, Err: errors.New("too large to be an ed25519 key")}
	}
	priv, err := parsePrivateKey(data)
	if err != nil {
		return nil, &KeyFileError{Path: path, Err: err}
	}
	return NewSigner(priv), nil
}

// parsePrivateKey decodes a PEM PKCS#8 ed25519 key. Its errors never quote the input.
func parsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New(`no PEM block found; expected a "PRIVATE KEY" file from 'probectl keys generate'`)
	}
	if block.Type != pemType {
		return nil, fmt.Errorf(`PEM block is %q, expected "PRIVATE KEY" (PKCS#8 ed25519)`, block.Type)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("not a valid PKCS#8 private key")
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("is a %T key, expected ed25519", key)
	}
	return priv, nil
}
