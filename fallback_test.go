package robby

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/robby-go/robby/robbytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const fallbackKey = "sk-fallback-0123456789"

var noRetries = option.WithMaxRetries(0)

// closedURL returns the URL of a server that was closed: connections to it
// are refused.
func closedURL() string {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	return dead.URL
}

// TestFallback checks which failures of the agent's model move a call to
// its fallback, plain and streamed.
func TestFallback(t *testing.T) {
	overflow := `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`
	cases := []struct {
		name    string
		primary robbytest.Reply // nil Reply: the primary is a closed server
		closed  bool
		slow    bool // the request has a timeout, which the primary lets pass
		larger  bool // the fallback is marked LargerContext
		switch_ bool
	}{
		{name: "503", primary: robbytest.Error(503, `{"error":{"message":"overloaded"}}`), switch_: true},
		{name: "429", primary: robbytest.Error(429, `{"error":{"message":"rate limited"}}`), switch_: true},
		{name: "500", primary: robbytest.Error(500, `oops`), switch_: true},
		{name: "connection refused", closed: true, switch_: true},
		{name: "timeout before the first byte", primary: robbytest.Handler(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }),
			slow: true, switch_: true},
		{name: "context length, larger fallback", primary: robbytest.Error(400, overflow), larger: true, switch_: true},
		{name: "context length, fallback not larger", primary: robbytest.Error(400, overflow)},
		{name: "400", primary: robbytest.Error(400, `{"error":{"message":"bad request"}}`)},
		{name: "401", primary: robbytest.Error(401, `{"error":{"message":"bad key"}}`)},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+"/"+faultMode(stream), func(t *testing.T) {
				primary := newServer(t)
				primary.Reply(tc.primary)
				url := primary.URL
				if tc.closed {
					url = closedURL()
				}
				reqOpts := []option.RequestOption{noRetries}
				if tc.slow {
					reqOpts = append(reqOpts, option.WithRequestTimeout(time.Second))
				}
				second := newServer(t)
				second.Reply(robbytest.Text("from the fallback"))
				a, err := New(WithBaseURL(url), WithAPIKey("sk-primary-0123456789"), WithModel("small"),
					WithRequestOptions(reqOpts...), WithFallback(Fallback{Model: "big", BaseURL: second.URL, APIKey: fallbackKey, LargerContext: tc.larger}))
				require.NoError(t, err)
				defer a.Close()

				res, _, err := faultAsk(t.Context(), a, stream, "Hi")
				if !tc.switch_ {
					require.Error(t, err)
					assert.Empty(t, second.Requests(), "no switch")
					var apiErr *APIError
					assert.ErrorAs(t, err, &apiErr)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, "from the fallback", res.Text)
				assert.Equal(t, []string{"big"}, res.Models)
				reqs := second.Requests()
				require.Len(t, reqs, 1)
				assert.Equal(t, "big", reqs[0].Model)
				assert.Equal(t, stream, reqs[0].Stream)
				assert.Equal(t, "Bearer "+fallbackKey, reqs[0].Header.Get("Authorization"))
				checkConsistent(t, a.Messages())
			})
		}
	}
}

// TestFallbackNeverSwitchesMidStream checks that a stream that began is
// not sent again to another model when it breaks.
func TestFallbackNeverSwitchesMidStream(t *testing.T) {
	primary := newServer(t)
	primary.Reply(robbytest.Handler(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, faultChunk("half "))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	second := newServer(t)
	second.Reply(robbytest.Text("from the fallback"))
	a := newTestAgent(t, primary, WithFallback(Fallback{Model: "big", BaseURL: second.URL}))
	res, deltas, err := faultAsk(t.Context(), a, true, "Hi")
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, []string{"half "}, deltas)
	assert.Equal(t, "half ", res.Text)
	assert.Empty(t, second.Requests(), "a stream that began is never switched")
}

// TestFallbackAllFail checks the error when every model fails: each
// model's error, no key in it.
func TestFallbackAllFail(t *testing.T) {
	primary := newServer(t)
	primary.Reply(robbytest.Error(503, `{"error":{"message":"overloaded, key sk-primary-0123456789"}}`))
	second := newServer(t)
	second.Reply(robbytest.Error(502, `{"error":{"message":"bad gateway for `+fallbackKey+`"}}`))
	a, err := New(WithBaseURL(primary.URL), WithAPIKey("sk-primary-0123456789"), WithModel("small"), WithRequestOptions(noRetries),
		WithFallback(Fallback{Model: "mid", BaseURL: second.URL, APIKey: fallbackKey}, Fallback{Model: "same-endpoint"}))
	require.NoError(t, err)
	defer a.Close()
	primary.Reply(robbytest.Error(500, `{"error":{"message":"still down"}}`))

	before := a.Messages()
	_, err = a.Run(t.Context(), "Hi")
	var fe *FallbackError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, []string{"small", "mid", "same-endpoint"}, fe.Models)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 503, apiErr.StatusCode)
	assert.NotContains(t, err.Error(), "sk-primary-0123456789")
	assert.NotContains(t, err.Error(), fallbackKey)
	assert.Contains(t, err.Error(), "still down")
	reqs := primary.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "same-endpoint", reqs[1].Model)
	assert.Equal(t, "Bearer sk-primary-0123456789", reqs[1].Header.Get("Authorization"), "the agent's key on its own endpoint")
	assert.Equal(t, before, a.Messages())
}

func TestFallbackOptionErrors(t *testing.T) {
	_, err := New(WithModel("m"), WithFallback(Fallback{}))
	require.ErrorContains(t, err, "WithFallback: fallback 1 has no Model")
	_, err = New(WithModel("m"), WithFallback(Fallback{Model: "x", BaseURL: "localhost:8080/v1"}))
	require.ErrorContains(t, err, `WithFallback: fallback "x": "localhost:8080/v1" is not an absolute`)
}

// TestFallbackGetsNoCredentialOfTheAgent: a fallback on another endpoint gets
// none of the credentials the agent's options set (headers, query). It gets
// only its own key and headers. A fallback on the agent's endpoint gets its
// key even when the agent's options set the Authorization header.
func TestFallbackGetsNoCredentialOfTheAgent(t *testing.T) {
	cases := []struct {
		name     string
		fallback Fallback // BaseURL set to the second server's if "other"
		other    bool
		want     http.Header // "" for a header that must be absent
	}{
		{"another endpoint, its own key and header", Fallback{APIKey: fallbackKey, Header: http.Header{"Api-Key": {"azure-0123456789"}}}, true,
			http.Header{"Authorization": {"Bearer " + fallbackKey}, "Api-Key": {"azure-0123456789"}, "X-Api-Key": {""}, "Cookie": {""}, "X-Note": {"kept"}}},
		{"another endpoint, no key", Fallback{}, true,
			http.Header{"Authorization": {""}, "X-Api-Key": {""}, "Cookie": {""}, "X-Note": {"kept"}}},
		{"the agent's endpoint, its own key", Fallback{APIKey: fallbackKey}, false,
			http.Header{"Authorization": {"Bearer " + fallbackKey}, "X-Api-Key": {"primary-header-0123456789"}, "X-Note": {"kept"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *http.Request
			capture := robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
				got = r
				robbytest.Text("from the fallback").ServeHTTP(w, r)
			})
			first := newServer(t)
			first.Reply(robbytest.Error(503, `{"error":{"message":"overloaded"}}`))
			if tc.other {
				second := newServer(t)
				second.Reply(capture)
				tc.fallback.BaseURL = second.URL
			} else {
				first.Reply(capture)
			}
			tc.fallback.Model = "big"
			a, err := New(WithBaseURL(first.URL), WithAPIKey("sk-primary-0123456789"), WithModel("small"),
				WithRequestOptions(noRetries, option.WithHeader("Authorization", "Bearer primary-header-0123456789"),
					option.WithHeader("X-Api-Key", "primary-header-0123456789"), option.WithHeader("Cookie", "session=primary"),
					option.WithHeader("X-Note", "kept"), option.WithQuery("key", "primary-query-0123456789"), option.WithQuery("v", "1")),
				WithFallback(tc.fallback))
			require.NoError(t, err)
			defer a.Close()
			res, err := a.Run(t.Context(), "Hi")
			require.NoError(t, err)
			assert.Equal(t, "from the fallback", res.Text)
			require.NotNil(t, got)
			for k, v := range tc.want {
				assert.Equal(t, v[0], got.Header.Get(k), k)
			}
			assert.Equal(t, "1", got.URL.Query().Get("v"))
			if tc.other {
				assert.Empty(t, got.URL.Query().Get("key"), "the agent's query credential")
				assert.NotContains(t, got.Header, "Cookie")
			}
		})
	}
}

// TestRedirectToAnotherHostCarriesNoCredential: the agent's endpoint
// redirects to another host (port); nothing reaches it with the agent's
// credentials. Go's client alone would pass the key to another port, and
// x-api-key to any host; openai-go refuses the redirect.
func TestRedirectToAnotherHostCarriesNoCredential(t *testing.T) {
	var got http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		robbytest.Text("moved").ServeHTTP(w, r)
	}))
	defer other.Close()
	srv := newServer(t)
	srv.Reply(robbytest.Handler(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	a, err := New(WithBaseURL(srv.URL), WithAPIKey("sk-primary-0123456789"), WithModel("small"),
		WithRequestOptions(noRetries, option.WithHeader("X-Api-Key", "primary-header-0123456789")))
	require.NoError(t, err)
	defer a.Close()
	_, err = a.Run(t.Context(), "Hi")
	if got != nil {
		assert.Empty(t, got.Get("Authorization"))
		assert.Empty(t, got.Get("X-Api-Key"))
	} else {
		assert.Error(t, err, "the redirect was refused")
	}
}
