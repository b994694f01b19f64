package mcpoauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/robby-go/robby/mcpoauth"
)

// A token endpoint that quotes the refresh token it refuses, raw and as
// the form body sent it, reaches neither the error nor the log (both had
// it as is); the error is still an *oauth2.RetrieveError.
func TestRefreshErrorHidesTheTokens(t *testing.T) {
	const refresh, secret = "rt+/refresh=Secret 0042", "client-Secret-0043"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant",
			"error_description": "unknown refresh token " + form.Get("refresh_token") + " in " + string(body)})
	}))
	t.Cleanup(echo.Close)
	store := &mapStore{grants: map[string]mcpoauth.Grant{"https://mcp.example/mcp": {
		Token:    oauth2.Token{AccessToken: "access-Token-0041", RefreshToken: refresh, Expiry: time.Now().Add(-time.Hour)},
		ClientID: "c", ClientSecret: secret, TokenURL: echo.URL, AuthStyle: oauth2.AuthStyleInParams,
	}}}
	var logs bytes.Buffer
	h, err := mcpoauth.New("https://mcp.example/mcp", mcpoauth.WithTokenStore(store),
		mcpoauth.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	require.NoError(t, err)
	ts, err := h.TokenSource(context.Background())
	require.NoError(t, err)
	_, err = ts.Token()
	require.Error(t, err)
	var rerr *oauth2.RetrieveError
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, "invalid_grant", rerr.ErrorCode)
	assert.Contains(t, err.Error(), "unknown refresh token [redacted]")
	require.Contains(t, logs.String(), "refreshing the token failed")
	for _, s := range []string{refresh, url.QueryEscape(refresh), secret, "Secret 0042", "Secret+0042"} {
		assert.NotContains(t, err.Error(), s)
		assert.NotContains(t, logs.String(), s)
	}
}
