package attest

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWritePrivateKeyThenLoadSignerGivesTheSameKey(t *testing.T) {
	t.Parallel()
	pub, priv, err := GenerateKey()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "probe.key")
	require.NoError(t, WritePrivateKey(path, priv))

	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	s, err := LoadSigner(path)
	require.NoError(t, err)
	assert.Equal(t, pub, s.PublicKey())
	assert.Equal(t, KeyID(pub), s.KeyID())
}

func TestWritePrivateKeyRefusesToOverwriteAFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "probe.key")
	require.NoError(t, os.WriteFile(path, []byte("precious"), 0o600))
	_, priv, err := GenerateKey()
	require.NoError(t, err)

	err = WritePrivateKey(path, priv)
	require.ErrorIs(t, err, ErrKeyExists)
	assert.Contains(t, err.Error(), path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "precious", string(data), "the existing file is untouched")
}

func TestLoadSignerRefusesAKeyOthersCanRead(t *testing.T) {
	t.Parallel()
	_, priv, err := GenerateKey()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "probe.key")
	require.NoError(t, WritePrivateKey(path, priv))
	require.NoError(t, os.Chmod(path, 0o644))

	_, err = LoadSigner(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "chmod 600 "+path)
	assertNoKeyMaterial(t, err.Error(), priv)
}

func TestLoadSignerExplainsFilesThatAreNotKeys(t *testing.T) {
	t.Parallel()
	_, rsaLike, err := GenerateKey()
	require.NoError(t, err)
	cases := []struct {
		name, content, want string
	}{
		{"a file without PEM says what it expected", "hello", "no PEM block"},
		{"a PEM block of another type names the type", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", `"PUBLIC KEY"`},
		{"a PRIVATE KEY block that is not PKCS#8 says so", "-----BEGIN PRIVATE KEY-----\n" +
			base64.StdEncoding.EncodeToString(rsaLike.Seed()) + "\n-----END PRIVATE KEY-----\n", "PKCS#8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "probe.key")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			_, err := LoadSigner(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), path)
			assertNoKeyMaterial(t, err.Error(), rsaLike)
		})
	}
}

func TestLoadSignerNamesAMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing.key")
	_, err := LoadSigner(path)
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), path)
}

func assertNoKeyMaterial(t *testing.T, msg string, priv ed25519.PrivateKey) {
	t.Helper()
	assert.NotContains(t, msg, base64.StdEncoding.EncodeToString(priv.Seed()))
	assert.NotContains(t, msg, "BEGIN")
}

func TestCreateKeyRegistersThePublicHalfOfTheFilesKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "probe.key")
	var gotID string
	var gotPub ed25519.PublicKey
	k, err := CreateKey(context.Background(), path, func(_ context.Context, id string, pub ed25519.PublicKey) error {
		gotID, gotPub = id, pub
		return nil
	})
	require.NoError(t, err)
	s, err := LoadSigner(path)
	require.NoError(t, err)
	assert.Equal(t, s.KeyID(), k.KeyID)
	assert.Equal(t, s.KeyID(), gotID)
	assert.Equal(t, s.PublicKey(), gotPub)
}

func TestCreateKeyRemovesTheFileWhenRegistrationFails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "probe.key")
	_, err := CreateKey(context.Background(), path, func(context.Context, string, ed25519.PublicKey) error {
		return errors.New("database down")
	})
	require.ErrorContains(t, err, "database down")
	assert.NoFileExists(t, path)
}
