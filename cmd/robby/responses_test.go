package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/robbytest"
)

// TestServeKeepsResponsesPerUser: with -store and -token-file, a user's
// responses outlive the process and stay the user's, in a SQLite file or a
// PostgreSQL database.
func TestServeKeepsResponsesPerUser(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "responses.db")
		testServeKeepsResponses(t, store, store)
	})
	t.Run("postgres", func(t *testing.T) {
		store := pgtest.Start(t).NewDatabase(t)
		u, err := url.Parse(store)
		require.NoError(t, err)
		testServeKeepsResponses(t, store, "PostgreSQL database "+u.Host+u.Path)
	})
}

func testServeKeepsResponses(t *testing.T, store, logged string) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("# who may call\nalice:alice-secret-1\n\nbob:bob-secret-2\n"), 0o600))
	srv := upstream(t, robbytest.Text("Noted, Alice."), robbytest.Text("Your number is 7."))
	args := []string{"-base-url", srv.URL, "-model", "agent", "-store", store, "-token-file", tokens}
	client := func(base, token string) openai.Client {
		return openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(token), option.WithMaxRetries(0))
	}
	ask := func(text, previous string) responses.ResponseNewParams {
		p := responses.ResponseNewParams{Model: "agent", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
		if previous != "" {
			p.PreviousResponseID = openai.String(previous)
		}
		return p
	}
	notFound := func(t *testing.T, err error) {
		t.Helper()
		var oe *openai.Error
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, http.StatusNotFound, oe.StatusCode)
	}

	var first string
	t.Run("first process", func(t *testing.T) {
		base, log := serveInProcess(t, args...)
		alice, bob := client(base, "alice-secret-1"), client(base, "bob-secret-2")
		r, err := alice.Responses.New(t.Context(), ask("My number is 7.", ""))
		require.NoError(t, err)
		assert.Equal(t, "Noted, Alice.", r.OutputText())
		first = r.ID
		_, err = bob.Responses.Get(t.Context(), first, responses.ResponseGetParams{})
		notFound(t, err)
		assert.Contains(t, log.String(), "keeping chats and responses in "+logged+"\n")
		assert.NotContains(t, log.String(), "secret")
	})
	t.Run("after a restart", func(t *testing.T) {
		base, log := serveInProcess(t, args...)
		alice, bob := client(base, "alice-secret-1"), client(base, "bob-secret-2")
		_, err := bob.Responses.New(t.Context(), ask("What is her number?", first))
		notFound(t, err)
		r, err := alice.Responses.New(t.Context(), ask("What is my number?", first))
		require.NoError(t, err)
		assert.Equal(t, "Your number is 7.", r.OutputText())
		reqs := srv.Requests()
		require.Len(t, reqs, 2, "bob's request reached the model")
		assert.Len(t, reqs[1].Messages, 3, "the stored question and answer, then the new question")
		assert.NotContains(t, log.String(), "secret")
	})
}

// TestServeTokens: -token and -token-file read USER:TOKEN or TOKEN, and
// their errors never show a token.
func TestServeTokens(t *testing.T) {
	tokens := serveTokens{}
	require.NoError(t, tokens.add("alice:a-secret", "-token"))
	require.NoError(t, tokens.add("shared-secret", "-token"))
	require.NoError(t, tokens.add("alice:a-secret", "-token"), "the same token for the same user again")
	assert.Equal(t, serveTokens{"a-secret": "alice", "shared-secret": ""}, tokens)

	for v, want := range map[string]string{
		"bob:a-secret": "a token already given to another user",
		":x-secret":    "an empty user name",
		"carol:":       "an empty token",
		"":             "an empty token",
	} {
		err := tokens.add(v, "-token")
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), "secret")
	}

	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("# only comments\n\n"), 0o600))
	assert.ErrorContains(t, serveTokens{}.readFile(file), "no token in the file")
	require.NoError(t, os.WriteFile(file, []byte("dave:d-secret\n:e-secret\n"), 0o600))
	err := serveTokens{}.readFile(file)
	assert.ErrorContains(t, err, "line 2: an empty user name")
	assert.NotContains(t, err.Error(), "secret")
}
