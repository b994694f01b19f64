package chattext

import (
	"encoding/json"
	"testing"
)

func TestContent(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`"hello"`, "hello"},
		{`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]`, "ab"},
		{`null`, ""},
		{`42`, ""},
	} {
		if got := Content(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("Content(%s) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}
