package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSameOrigin(t *testing.T) {
	cases := []struct {
		name, host, origin string
		tokens             bool
		admitted           bool
	}{
		{"the server's own page, by IP", "127.0.0.1:8080", "http://127.0.0.1:8080", false, true},
		{"the server's own page, localhost", "localhost:8080", "http://localhost:8080", false, true},
		{"the server's own page, IPv6", "[::1]:8080", "http://[::1]:8080", false, true},
		{"another port", "127.0.0.1:8080", "http://127.0.0.1:9090", false, false},
		{"another site", "127.0.0.1:8080", "https://evil.example", false, false},
		{"a DNS name without tokens: rebinding", "evil.example:8080", "http://evil.example:8080", false, false},
		{"a DNS name with tokens", "robby.example.com", "https://robby.example.com", true, true},
		{"a foreign scheme", "127.0.0.1:8080", "file://127.0.0.1:8080", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewGuard(nil, nil)
			if c.tokens {
				g = NewGuard(map[string]string{"tok": "u"}, nil)
			}
			r := httptest.NewRequest(http.MethodPost, "http://"+c.host+"/api/chat", nil)
			r.Host = c.host
			r.Header.Set("Origin", c.origin)
			r.Header.Set("Authorization", "Bearer tok")
			w := httptest.NewRecorder()
			_, ok := g.Admit(w, r)
			assert.Equal(t, c.admitted, ok, "answered %d: %s", w.Code, w.Body.String())
			if !c.admitted {
				assert.Equal(t, http.StatusForbidden, w.Code)
			}
			assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"), "a same-origin page needs no CORS header")
		})
	}
}

func TestCompactionKeepsSummaryOut(t *testing.T) {
	b, err := json.Marshal(Compaction[int]{Policy: "summarize", TokensBefore: 9, Summary: "the summary", Usage: 7})
	require.NoError(t, err)
	assert.JSONEq(t, `{"policy":"summarize","turnsDropped":0,"messagesDropped":0,"tokensBefore":9,"tokensAfter":0,"budget":0}`, string(b))
}

// TestReplaceLoneSurrogates: an escaped surrogate without its other half
// becomes \ufffd, as encoding/json reads it; pairs, escaped backslashes
// before a u, and other escapes stay as they came.
func TestReplaceLoneSurrogates(t *testing.T) {
	for in, want := range map[string]string{
		`"a\ud800b"`:               `"a\ufffdb"`,
		`"\uDC00"`:                 `"\ufffd"`,
		`"\ud83c\udf0d"`:           `"\ud83c\udf0d"`,
		`"\ud83c\ud83c\udf0d"`:     `"\ufffd\ud83c\udf0d"`,
		`"\udf0d\ud83c"`:           `"\ufffd\ufffd"`,
		`"\\ud800"`:                `"\\ud800"`,
		`"\\\ud800"`:               `"\\\ufffd"`,
		`{"k\ud800":["\n\u0041"]}`: `{"k\ufffd":["\n\u0041"]}`,
		`"\ud800\u0041"`:           `"\ufffd\u0041"`,
		`"\ud80`:                   `"\ud80`,
		`"\`:                       `"\`,
		`"\ud800\`:                 `"\ufffd\`,
	} {
		b := []byte(in)
		replaceLoneSurrogates(b)
		assert.Equal(t, want, string(b), in)
	}
}

// FuzzReplaceLoneSurrogates: what the replacement leaves decodes as the
// body did (encoding/json reads a lone surrogate as U+FFFD), and is JSON
// exactly when the body was. It never reads past the body.
func FuzzReplaceLoneSurrogates(f *testing.F) {
	for _, seed := range []string{`"a\ud800b"`, `["\ud83c\udf0d","\\ud800"]`, `{"\udc00":"\uD800\uDC00"}`, `"\ud800\ud800\udc00"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want any
		wantErr := json.Unmarshal(body, &want)
		b := append([]byte(nil), body...)
		replaceLoneSurrogates(b)
		var got any
		err := json.Unmarshal(b, &got)
		if (err == nil) != (wantErr == nil) || !assert.ObjectsAreEqual(want, got) {
			t.Fatalf("%q became %q: %#v, %v; before: %#v, %v", body, b, got, err, want, wantErr)
		}
	})
}

func TestAuthenticate(t *testing.T) {
	g := NewGuard(map[string]string{"tok-a": "ann", "tok-b": "bob", "tok-e": ""}, nil)
	for _, c := range []struct {
		header string
		user   string
		ok     bool
	}{
		{"Bearer tok-a", "ann", true},
		{"bearer tok-b", "bob", true},
		{"  BEARER   tok-a ", "ann", true},
		{"Bearer tok-e", "", true}, // a token may name the user ""
		{"Bearer tok-", "", false},
		{"Bearer tok-a2", "", false},
		{"Basic tok-a", "", false},
		{"tok-a", "", false},
		{"", "", false},
	} {
		user, ok := g.Authenticate(c.header)
		assert.Equal(t, c.ok, ok, "%q", c.header)
		assert.Equal(t, c.user, user, "%q", c.header)
	}
	user, ok := NewGuard(nil, nil).Authenticate("Bearer anything")
	assert.True(t, ok, "no tokens: every request is of the user \"\"")
	assert.Empty(t, user)
}

// BenchmarkAuthenticate: a token is found in the same time however many
// tokens the server has.
func BenchmarkAuthenticate(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		tokens := make(map[string]string, n)
		for i := range n {
			tokens[fmt.Sprintf("token-%064d", i)] = fmt.Sprint("user-", i)
		}
		g, header := NewGuard(tokens, nil), fmt.Sprintf("Bearer token-%064d", n/2)
		b.Run(fmt.Sprint(n, "-tokens"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := g.Authenticate(header); !ok {
					b.Fatal("the token was refused")
				}
			}
		})
	}
}
