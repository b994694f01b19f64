package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"testing"
)

// replay answers every request with a recorded event stream.
type replay []byte

func (r replay) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(r)), Request: req}, nil
}

// BenchmarkRespond decodes one Responses stream that robby served (a
// continued turn, 20 text deltas), as each user does every turn: what it
// allocates is the load tool's own cost, paid beside robby.
func BenchmarkRespond(b *testing.B) {
	stream, err := os.ReadFile("testdata/responses.sse")
	if err != nil {
		b.Fatal(err)
	}
	d := &driver{base: "http://robby/v1", client: &http.Client{Transport: replay(stream)}}
	b.ReportAllocs()
	for b.Loop() {
		text, id, err := d.respond(b.Context(), "token", "[u0 t2] question 2", "resp_1")
		if err != nil || id == "" || text != answer("[u0 t2]", "", 20) {
			b.Fatalf("%q, %q, %v", text, id, err)
		}
	}
}
