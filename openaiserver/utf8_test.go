package openaiserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// rawBytes are the \xHH of the bodies below: the bytes they stand for.
var rawBytes = regexp.MustCompile(`\\x[0-9a-f]{2}`)

// TestInvalidUTF8GoesUpstreamReplaced: bytes that are not UTF-8 in a
// client's request (in a message, a tool's output, an extra parameter)
// reach the model as U+FFFD, as encoding/json reads them: what goes
// upstream is valid UTF-8, on chat completions and responses, stored or not.
func TestInvalidUTF8GoesUpstreamReplaced(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)})
	for name, tc := range map[string]struct{ path, body string }{
		"chat completions": {"/v1/chat/completions", `{"model":"robby","top_k":"\xff","messages":[{"role":"user","content":"Z\xc3rich \xed\xa0\x80"},` +
			`{"role":"assistant","content":"ok\xfe"},{"role":"user","content":[{"type":"text","text":"\xf0\x9f"}]}]}`},
		"responses":            {"/v1/responses", `{"model":"robby","input":[{"role":"user","content":"Z\xc3rich"},{"role":"user","content":[{"type":"input_text","text":"\xff"}]}]}`},
		"responses not stored": {"/v1/responses", `{"model":"robby","store":false,"instructions":"be \xfe","input":"Z\xc3rich"}`},
		"responses continued": {"/v1/responses", `{"model":"robby","tools":[{"type":"function","name":"f","parameters":{"type":"object","description":"\xff"}}],` +
			`"input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":\"\xff\"}"},{"type":"function_call_output","call_id":"c1","output":"\xc3"}]}`},
	} {
		t.Run(name, func(t *testing.T) {
			body := rawBytes.ReplaceAllFunc([]byte(tc.body), func(m []byte) []byte {
				b, _ := strconv.ParseUint(string(m[2:]), 16, 8)
				return []byte{byte(b)}
			})
			require.False(t, utf8.Valid(body))
			sent := sentUpstream(t, upstream, url+tc.path, body)
			assert.True(t, utf8.Valid(sent), "%q", sent)
			assert.Contains(t, string(sent), "\uFFFD")
		})
	}
}

// TestLoneSurrogateGoesUpstreamReplaced: an escaped surrogate without its
// other half (\ud800) in a client's message reaches the model as \ufffd, as
// encoding/json reads it, on chat completions and responses. A whole pair
// goes as it came.
func TestLoneSurrogateGoesUpstreamReplaced(t *testing.T) {
	upstream := newServer(t)
	url := serveResponses(t, upstream, openaiserver.Options{Store: newStore(t)})
	for name, tc := range map[string]struct{ path, body string }{
		"chat completions": {"/v1/chat/completions", `{"model":"robby","messages":[{"role":"user","content":"a\ud800b \ud83c\udf0d"}]}`},
		"responses":        {"/v1/responses", `{"model":"robby","input":[{"role":"user","content":"a\ud800b \ud83c\udf0d"}]}`},
		"responses parts":  {"/v1/responses", `{"model":"robby","input":[{"role":"user","content":[{"type":"input_text","text":"a\udc00b \ud83c\udf0d"}]}]}`},
	} {
		t.Run(name, func(t *testing.T) {
			body := sentUpstream(t, upstream, url+tc.path, []byte(tc.body))
			sent := strings.ToLower(string(body))
			assert.NotContains(t, sent, `\ud800`)
			assert.NotContains(t, sent, `\udc00`)
			var msg struct {
				Messages []struct {
					Content json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(body, &msg))
			var content any // a string, or parts
			require.NoError(t, json.Unmarshal(msg.Messages[len(msg.Messages)-1].Content, &content))
			assert.Contains(t, fmt.Sprint(content), "a\uFFFDb \U0001F30D", "%s", sent)
		})
	}
}

// sentUpstream posts body to url, which answers 200, and returns what went
// to the model.
func sentUpstream(t *testing.T, upstream *robbytest.Server, url string, body []byte) []byte {
	t.Helper()
	upstream.Reply(robbytest.Text("Fine."))
	before := len(upstream.Requests())
	res, err := http.Post(url, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
	reqs := upstream.Requests()
	require.Len(t, reqs, before+1)
	return reqs[before].Body
}
