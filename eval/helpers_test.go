package eval_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/robbytest/agenttest"
)

// flaky is a scripted model right in `right` of every `of` calls for each
// prompt: the first `right` calls of each cycle answer "Oslo", the others
// "Bergen".
func flaky(t testing.TB, right, of int) *robbytest.Server {
	srv := agenttest.NewServer(t)
	var (
		mu    sync.Mutex
		calls = map[string]int{}
	)
	srv.Fallback(robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		prompt := lastUser(req)
		mu.Lock()
		n := calls[prompt]
		calls[prompt]++
		mu.Unlock()
		if n%of < right {
			return robbytest.Text("The capital is Oslo.").WithUsage(20, 5)
		}
		return robbytest.Text("The capital is Bergen.").WithUsage(20, 5)
	}))
	return srv
}

// lastUser is the text of a request's last user message.
func lastUser(req robbytest.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

var newAgent = agenttest.New

// lookup is a tool that knows capitals.
var lookup = robby.NewTool("lookup", "Look a country's capital up",
	func(_ context.Context, in struct {
		Country string `json:"country"`
	}) (string, error) {
		if strings.EqualFold(in.Country, "norway") {
			return "Oslo", nil
		}
		return "unknown", nil
	})
