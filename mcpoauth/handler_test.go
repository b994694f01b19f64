package mcpoauth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/mcpoauth"
)

// TestStoredGrantOutlivesTheProcess: a second handler on the same
// encrypted file connects with the stored token, asking no one; with
// another key, the file is refused, not overwritten.
func TestStoredGrantOutlivesTheProcess(t *testing.T) {
	p := newProtected(t)
	path := filepath.Join(t.TempDir(), "robby", "tokens")
	key := make([]byte, 32)
	rand.Read(key)
	store, err := mcpoauth.NewFileStore(path, key)
	require.NoError(t, err)

	h, err := mcpoauth.New(p.url, mcpoauth.WithOpenURL(browser), mcpoauth.WithTokenStore(store))
	require.NoError(t, err)
	a := connect(t, p, h)
	_, err = call(t, a, "whoami")
	require.NoError(t, err)
	require.NoError(t, a.Close())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	h2, err := mcpoauth.New(p.url, mcpoauth.WithOpenURL(func(context.Context, string) error {
		t.Error("the user was asked again")
		return nil
	}), mcpoauth.WithTokenStore(store))
	require.NoError(t, err)
	out, err := call(t, connect(t, p, h2), "whoami")
	require.NoError(t, err)
	assert.Contains(t, out, "alice")
	assert.Equal(t, 1, p.as.count("authorize"))

	before, err := os.ReadFile(path)
	require.NoError(t, err)
	other := make([]byte, 32)
	rand.Read(other)
	wrong, err := mcpoauth.NewFileStore(path, other)
	require.NoError(t, err)
	_, err = wrong.Load(context.Background(), p.url)
	assert.ErrorIs(t, err, mcpoauth.ErrWrongKey)
	assert.ErrorIs(t, wrong.Save(context.Background(), p.url, &mcpoauth.Grant{}), mcpoauth.ErrWrongKey)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "a file another key sealed is left alone")
}

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tokens")
	key := bytes.Repeat([]byte{7}, 32)
	s, err := mcpoauth.NewFileStore(path, key)
	require.NoError(t, err)
	g, err := s.Load(ctx, "https://a.example/mcp")
	require.NoError(t, err)
	assert.Nil(t, g, "no file, no grant")

	a := &mcpoauth.Grant{ClientID: "a", TokenURL: "https://as.example/token", Scopes: []string{"read"}}
	a.Token.AccessToken, a.Token.RefreshToken = "access-a", "refresh-a"
	a.Token.Expiry = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b := &mcpoauth.Grant{ClientID: "b", ClientSecret: "secret-b"}
	require.NoError(t, s.Save(ctx, "https://a.example/mcp", a))
	require.NoError(t, s.Save(ctx, "https://b.example/mcp", b))

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, secret := range []string{"access-a", "refresh-a", "secret-b", "client_id"} {
		assert.NotContains(t, string(data), secret, "the file is encrypted")
	}
	got, err := s.Load(ctx, "https://a.example/mcp")
	require.NoError(t, err)
	assert.Equal(t, a.Token.AccessToken, got.Token.AccessToken)
	assert.True(t, a.Token.Expiry.Equal(got.Token.Expiry))
	assert.Equal(t, a.Scopes, got.Scopes)
	got, err = s.Load(ctx, "https://b.example/mcp")
	require.NoError(t, err)
	assert.Equal(t, "secret-b", got.ClientSecret)

	data[len(data)-1] ^= 1
	require.NoError(t, os.WriteFile(path, data, 0o600))
	_, err = s.Load(ctx, "https://a.example/mcp")
	assert.ErrorIs(t, err, mcpoauth.ErrWrongKey, "an altered file is refused")

	_, err = mcpoauth.NewFileStore(path, []byte("short"))
	assert.ErrorContains(t, err, "must be 32 bytes, not 5")
}

// TestFileStoreConcurrentSaves: saves of many servers at once are all kept.
func TestFileStoreConcurrentSaves(t *testing.T) {
	s, err := mcpoauth.NewFileStore(filepath.Join(t.TempDir(), "tokens"), bytes.Repeat([]byte{1}, 32))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			assert.NoError(t, s.Save(context.Background(), strconv.Itoa(i), &mcpoauth.Grant{ClientID: strconv.Itoa(i)}))
		})
	}
	wg.Wait()
	for i := range 8 {
		g, err := s.Load(context.Background(), strconv.Itoa(i))
		require.NoError(t, err)
		require.NotNil(t, g)
		assert.Equal(t, strconv.Itoa(i), g.ClientID)
	}
}

// TestClientCredentials: a machine authorizes with its ID and secret, no
// user, no browser.
func TestClientCredentials(t *testing.T) {
	p := newProtected(t)
	p.as.addClient("machine", "s3cret")
	h, err := mcpoauth.New(p.url, mcpoauth.WithClientCredentials("machine", "s3cret"))
	require.NoError(t, err)
	out, err := call(t, connect(t, p, h), "whoami")
	require.NoError(t, err)
	assert.Equal(t, "machine with read", out)
	assert.Equal(t, 1, p.as.count("client_credentials"))
	assert.Zero(t, p.as.count("authorize"))
	assert.Zero(t, p.as.count("register"))

	h, err = mcpoauth.New(p.url, mcpoauth.WithClientCredentials("machine", "wrong"))
	require.NoError(t, err)
	_, err = newAgent(t, p, h)
	assert.ErrorContains(t, err, `mcpoauth: authorizing with 127.0.0.1:`)
	assert.ErrorContains(t, err, `oauth2: "invalid_client"`)
}

// TestPreregisteredClient: a client registered with a fixed loopback
// redirect URI authorizes on that port, with no dynamic registration.
func TestPreregisteredClient(t *testing.T) {
	p := newProtected(t)
	port := freePort(t)
	p.as.addClient("desktop-app", "", "http://127.0.0.1:"+strconv.Itoa(port)+"/callback")
	h, err := mcpoauth.New(p.url, mcpoauth.WithClient("desktop-app", ""), mcpoauth.WithCallbackPort(port),
		mcpoauth.WithOpenURL(browser), mcpoauth.WithScopes("read", "write"))
	require.NoError(t, err)
	out, err := call(t, connect(t, p, h), "whoami")
	require.NoError(t, err)
	assert.Equal(t, "alice with offline_access read write", out, "the configured scopes, not the metadata's, and a refresh token")
	assert.Zero(t, p.as.count("register"))
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestLoopbackChecksState: a redirect with another state is refused, and
// the real one still completes the authorization.
func TestLoopbackChecksState(t *testing.T) {
	p := newProtected(t)
	var forged int
	h, err := mcpoauth.New(p.url, mcpoauth.WithOpenURL(func(ctx context.Context, authURL string) error {
		resp, err := http.Get(redirectOf(t, authURL) + "?code=stolen&state=forged")
		if err != nil {
			return err
		}
		resp.Body.Close()
		forged = resp.StatusCode
		return browser(ctx, authURL)
	}))
	require.NoError(t, err)
	_, err = call(t, connect(t, p, h), "whoami")
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, forged)
}

// redirectOf returns the redirect URI an authorization URL names.
func redirectOf(t *testing.T, authURL string) string {
	t.Helper()
	i := strings.Index(authURL, "redirect_uri=")
	require.GreaterOrEqual(t, i, 0)
	v := authURL[i+len("redirect_uri="):]
	v, _, _ = strings.Cut(v, "&")
	v = strings.NewReplacer("%3A", ":", "%2F", "/").Replace(v)
	return v
}

// TestAuthorizationTimeout: a user who never comes back costs the call
// the timeout, with an error that says so.
func TestAuthorizationTimeout(t *testing.T) {
	p := newProtected(t)
	h, err := mcpoauth.New(p.url, mcpoauth.WithAuthorizationTimeout(200*time.Millisecond),
		mcpoauth.WithOpenURL(func(context.Context, string) error { return nil }))
	require.NoError(t, err)
	_, err = newAgent(t, p, h)
	assert.ErrorIs(t, err, mcpoauth.ErrTimeout)
}

// TestDefaultBrowser runs the default opener with an xdg-open of the test's
// own, which hands the URL to the test: the URL is also written for the
// user.
func TestDefaultBrowser(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the test's xdg-open is a shell script")
	}
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	script := "#!/bin/sh\nprintf '%s' \"$1\" > " + opened + ".tmp && mv " + opened + ".tmp " + opened + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "xdg-open"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	p := newProtected(t)
	var prompt syncBuffer
	h, err := mcpoauth.New(p.url, mcpoauth.WithPrompt(&prompt))
	require.NoError(t, err)
	go func() { // the user's browser
		for range 200 {
			if u, err := os.ReadFile(opened); err == nil {
				browser(context.Background(), string(u))
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	_, err = call(t, connect(t, p, h), "whoami")
	require.NoError(t, err)
	u, err := os.ReadFile(opened)
	require.NoError(t, err)
	assert.Contains(t, prompt.String(), string(u), "the URL is written for the user too")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

func TestNewRejectsBadOptions(t *testing.T) {
	fetch := func(context.Context, string) error { return nil }
	for _, tc := range []struct {
		url  string
		opts []mcpoauth.Option
		want string
	}{
		{"mcp.example.com", nil, "absolute http or https URL"},
		{"https://x/mcp", []mcpoauth.Option{nil}, "nil Option"},
		{"https://x/mcp", []mcpoauth.Option{mcpoauth.WithClientCredentials("id", "")}, "ID and secret are both required"},
		{"https://x/mcp", []mcpoauth.Option{mcpoauth.WithClientCredentials("id", "s"), mcpoauth.WithOpenURL(fetch)}, "excludes the browser"},
		{"https://x/mcp", []mcpoauth.Option{mcpoauth.WithCallbackPort(70000)}, "1-65535"},
		{"https://x/mcp", []mcpoauth.Option{mcpoauth.WithClientMetadataURL("https://x")}, "https URL with a path"},
		{"https://x/mcp", []mcpoauth.Option{mcpoauth.WithAuthorizationTimeout(-1), mcpoauth.WithClient("", "")},
			"timeout must be positive; WithClient: empty client ID"},
	} {
		_, err := mcpoauth.New(tc.url, tc.opts...)
		assert.ErrorContains(t, err, tc.want)
	}
}

// TestFileStoreTwoProcesses has two processes (this test binary again)
// and two FileStores of this one save grants of their own servers to one
// file at once: every grant is kept (without the lock, a save made between
// another's read and write was lost).
func TestFileStoreTwoProcesses(t *testing.T) {
	const saves = 40
	key := bytes.Repeat([]byte{3}, 32)
	if path := os.Getenv("MCPOAUTH_CHILD"); path != "" {
		saveAll(t, path, key, os.Getenv("MCPOAUTH_NAME"), saves)
		return
	}
	path := filepath.Join(t.TempDir(), "tokens")
	names := []string{"p1", "p2", "g1", "g2"}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			if name[0] == 'g' { // a FileStore of its own, in this process
				saveAll(t, path, key, name, saves)
				return
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestFileStoreTwoProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), "MCPOAUTH_CHILD="+path, "MCPOAUTH_NAME="+name)
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "%s:\n%s", name, out)
		})
	}
	wg.Wait()
	s, err := mcpoauth.NewFileStore(path, key)
	require.NoError(t, err)
	lost := 0
	for _, name := range names {
		for i := range saves {
			g, err := s.Load(context.Background(), fmt.Sprint(name, "/", i))
			require.NoError(t, err)
			if g == nil {
				lost++
			}
		}
	}
	assert.Zero(t, lost, "grants lost of %d", len(names)*saves)
}

// saveAll saves n grants, each of a server of its own, through a FileStore
// of its own.
func saveAll(t *testing.T, path string, key []byte, name string, n int) {
	s, err := mcpoauth.NewFileStore(path, key)
	require.NoError(t, err)
	for i := range n {
		server := fmt.Sprint(name, "/", i)
		require.NoError(t, s.Save(context.Background(), server, &mcpoauth.Grant{ClientID: server}))
	}
}
