package robby

import (
	"context"
	"testing"
)

// TestTelemetryOffAllocatesNothing checks the hooks the loop calls on an
// agent without a tracer or meter provider: each is a nil test.
func TestTelemetryOffAllocatesNothing(t *testing.T) {
	var tel *telemetry
	ctx := context.Background()
	req := &request{}
	res := new(Result)
	ts := &toolset{}
	calls := []ToolCall{{ID: "1", Name: "add"}}
	r := new(ToolResult)
	data := []byte(`{"id":"x"}`)
	allocs := testing.AllocsPerRun(100, func() {
		c, run := tel.startRun(ctx, "m", nil)
		c, chat := tel.startChat(c, "m", req)
		chat.meta(data)
		chat.end(c, nil, nil)
		ops := tel.startTools(c, ts, calls)
		c = ops.context(c, 0)
		ops.end(c, 0, r)
		tel.injectMeta(c, nil)
		run.end(c, res, nil)
	})
	if allocs != 0 {
		t.Errorf("the hooks allocate %v times with telemetry off, want 0", allocs)
	}
}
