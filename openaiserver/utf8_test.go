package openaiserver_test

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strconv"
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
			upstream.Reply(robbytest.Text("Fine."))
			before := len(upstream.Requests())
			body := rawBytes.ReplaceAllFunc([]byte(tc.body), func(m []byte) []byte {
				b, _ := strconv.ParseUint(string(m[2:]), 16, 8)
				return []byte{byte(b)}
			})
			require.False(t, utf8.Valid(body))
			res, err := http.Post(url+tc.path, "application/json", bytes.NewReader(body))
			require.NoError(t, err)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode, "%s", b)
			reqs := upstream.Requests()
			require.Len(t, reqs, before+1)
			sent := reqs[before].Body
			assert.True(t, utf8.Valid(sent), "%q", sent)
			assert.Contains(t, string(sent), "\uFFFD")
		})
	}
}
