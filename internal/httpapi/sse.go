package httpapi

import (
	"encoding/json"
	"iter"
	"net/http"
)

// An SSE writes server-sent events, each flushed as written. It keeps the
// first write that failed, and writes nothing after it.
type SSE struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	Err error // the first write that failed: the client went away
}

// NewSSE writes the headers of an event stream to w (after those set on
// it already) and returns the stream.
func NewSSE(w http.ResponseWriter) *SSE {
	StartSSE(w)
	return &SSE{w: w, rc: http.NewResponseController(w)}
}

// Data writes v as the JSON data of an event.
func (s *SSE) Data(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.Err = err
	}
	s.Raw(b)
}

// Raw writes data, which holds no newline, as an event.
func (s *SSE) Raw(data []byte) {
	if s.Err != nil {
		return
	}
	buf := make([]byte, 0, len(data)+8)
	buf = append(append(append(buf, "data: "...), data...), '\n', '\n')
	if _, s.Err = s.w.Write(buf); s.Err == nil {
		s.Err = s.rc.Flush()
	}
}

// Relay hands each event of a run to each, until the run ends or out fails. It
// returns the last event handed, which holds the run's result if the run ended
// well, and the error that ended the run. When out failed, the run is cancelled
// (the loop's end stops it), and out.Err is returned.
func Relay[E any](events iter.Seq2[E, error], out *SSE, each func(E)) (last E, err error) {
	for e, err := range events {
		if err != nil {
			return last, err
		}
		last = e
		each(e)
		if out.Err != nil {
			return last, out.Err
		}
	}
	return last, nil
}
