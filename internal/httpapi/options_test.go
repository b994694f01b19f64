package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/robby-go/robby/agui"
	"github.com/robby-go/robby/internal/httpapi"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/uistream"
)

// fields are the shared fields of an endpoint's Options.
type fields struct {
	tokens      map[string]string
	origins     []string
	maxBytes    int64
	maxMessages int
	logger      *slog.Logger
}

func (f *fields) fill() *httpapi.Guard {
	return httpapi.Shared{Tokens: &f.tokens, CORSOrigins: &f.origins,
		MaxRequestBytes: &f.maxBytes, MaxMessages: &f.maxMessages, Logger: &f.logger}.Fill()
}

func TestFillGivesTheDefaults(t *testing.T) {
	var f fields
	f.maxBytes, f.maxMessages = -1, -1
	g := f.fill()
	assert.EqualValues(t, httpapi.DefaultMaxRequestBytes, f.maxBytes)
	assert.Equal(t, httpapi.DefaultMaxMessages, f.maxMessages)
	assert.NotNil(t, f.logger)
	user, ok := g.Authenticate("")
	assert.True(t, ok, "no tokens: every request is admitted")
	assert.Empty(t, user)
}

func TestFillKeepsWhatIsSetAndCopiesIt(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tokens, origins := map[string]string{"t": "ann"}, []string{"https://a.example"}
	f := fields{tokens: tokens, origins: origins, maxBytes: 10, maxMessages: 3, logger: log}
	g := f.fill()
	assert.EqualValues(t, 10, f.maxBytes)
	assert.Equal(t, 3, f.maxMessages)
	assert.Same(t, log, f.logger)
	tokens["t"], origins[0] = "bob", "https://b.example"
	assert.Equal(t, map[string]string{"t": "ann"}, f.tokens, "the caller's map is not the options'")
	assert.Equal(t, []string{"https://a.example"}, f.origins, "the caller's slice is not the options'")
	user, ok := g.Authenticate("Bearer t")
	assert.True(t, ok)
	assert.Equal(t, "ann", user, "the guard holds the tokens as they were")
	r := httptest.NewRequest(http.MethodGet, "http://robby.example/v1/models", nil)
	r.Header.Set("Origin", "https://a.example")
	r.Header.Set("Authorization", "Bearer t")
	_, ok = g.Admit(httptest.NewRecorder(), r)
	assert.True(t, ok, "the guard holds the origins as they were")
}

// TestEndpointsExportTheSharedDefaults holds each endpoint's documented
// defaults to the ones Fill gives.
func TestEndpointsExportTheSharedDefaults(t *testing.T) {
	for _, d := range []struct {
		name        string
		maxBytes    int64
		maxMessages int
	}{
		{"openaiserver", openaiserver.DefaultMaxRequestBytes, openaiserver.DefaultMaxMessages},
		{"uistream", uistream.DefaultMaxRequestBytes, uistream.DefaultMaxMessages},
		{"agui", agui.DefaultMaxRequestBytes, agui.DefaultMaxMessages},
	} {
		assert.EqualValues(t, httpapi.DefaultMaxRequestBytes, d.maxBytes, d.name)
		assert.EqualValues(t, httpapi.DefaultMaxMessages, d.maxMessages, d.name)
	}
}
