package mcpoauth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// FileStore is a [TokenStore] in one file, encrypted with AES-256-GCM. The file
// holds the grants of all servers, as JSON, sealed whole with a fresh nonce at
// each save. It is written atomically (a temporary file renamed), and readable
// by its owner only.
//
// A FileStore is safe for concurrent use, also by several processes (or several
// FileStores) on one file. A save reads the file, changes one grant and writes
// it back under an exclusive lock. The lock is held on the file beside it named
// PATH.lock, which is left in place (flock on Unix, LockFileEx on Windows). So
// no save loses another's. A load takes no lock: the rename makes each version
// whole.
type FileStore struct {
	path string
	aead cipher.AEAD
	mu   sync.Mutex
}

// fileStoreAD binds the sealed data to its format.
var fileStoreAD = []byte("robby mcpoauth.FileStore v1")

// ErrWrongKey is returned, wrapped, when a [FileStore]'s file cannot be
// opened with its key: another key sealed it, or it was altered.
var ErrWrongKey = errors.New("mcpoauth: the token file cannot be decrypted with this key (another key, or an altered file)")

// NewFileStore returns the store in the file at path, sealed with key. The
// file, and its directory, are made at the first save. key is 32 random bytes,
// such as those of `openssl rand -base64 32` decoded. Keep it apart from the
// file (in an environment variable, a keychain).
func NewFileStore(path string, key []byte) (*FileStore, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("mcpoauth: the token file key must be 32 bytes, not %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("mcpoauth: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("mcpoauth: %w", err)
	}
	return &FileStore{path: path, aead: aead}, nil
}

// Load returns the server's grant, or nil if the file has none.
func (s *FileStore) Load(_ context.Context, server string) (*Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	grants, err := s.read()
	if err != nil {
		return nil, err
	}
	return grants[server], nil
}

// Save replaces the server's grant, keeping the others'.
func (s *FileStore) Save(_ context.Context, server string, g *Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	grants, err := s.read()
	if err != nil {
		return err // never overwrite a file this key cannot read
	}
	grants[server] = g
	plain, err := json.Marshal(grants)
	if err != nil {
		return fmt.Errorf("mcpoauth: %w", err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return s.write(s.aead.Seal(nonce, nonce, plain, fileStoreAD))
}

// lock takes the lock of the file for other processes, and returns its
// release.
func (s *FileStore) lock() (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return nil, fmt.Errorf("mcpoauth: %w", err)
	}
	f, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("mcpoauth: locking the token file: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("mcpoauth: locking the token file %s: %w", s.path, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// read returns the grants of the file, none if it does not exist.
func (s *FileStore) read() (map[string]*Grant, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*Grant{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcpoauth: reading the token file: %w", err)
	}
	n := s.aead.NonceSize()
	if len(data) < n {
		return nil, fmt.Errorf("%w: %s", ErrWrongKey, s.path)
	}
	plain, err := s.aead.Open(nil, data[:n], data[n:], fileStoreAD)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrWrongKey, s.path)
	}
	grants := map[string]*Grant{}
	if err := json.Unmarshal(plain, &grants); err != nil {
		return nil, fmt.Errorf("mcpoauth: the token file %s: %w", s.path, err)
	}
	return grants, nil
}

// write replaces the file with data atomically.
func (s *FileStore) write(data []byte) error {
	dir := filepath.Dir(s.path)                              // made by lock
	f, err := os.CreateTemp(dir, filepath.Base(s.path)+".*") // mode 0600
	if err != nil {
		return fmt.Errorf("mcpoauth: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("mcpoauth: writing the token file: %w", err)
	}
	return nil
}
