package eval_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/eval"
	"github.com/robby-go/robby/robbytest"
)

// hostile is model text that would run a script, close the page's
// elements or drive a terminal, were it not escaped.
const hostile = "</div></details><script>alert('pwned')</script><img src=x onerror=alert(1)>\x1b[2J\x1b]0;owned\x07"

// hostileReport is the report of a failing run whose model answered
// hostile text, called a tool with it, and had it in a case's name.
func hostileReport(t *testing.T) *eval.Report {
	srv := robbytest.NewServer()
	t.Cleanup(srv.Close)
	srv.Reply(robbytest.ToolCalls(robbytest.Call("lookup", `{"country":"<b>Norway</b>"}`)), robbytest.Text(hostile))
	d := eval.Dataset{Name: "<i>hostile</i>", Cases: []eval.Case{{
		Name: `<b onclick="x">case</b>`, Input: "<script>input()</script>", Expected: "Oslo",
		Evaluators: []eval.Evaluator{eval.ContainsExpected(), eval.Func("echo", func(_ context.Context, out *eval.Output) (eval.Score, error) {
			return eval.Score{Reason: out.Text}, nil
		})},
	}}}
	rep, err := eval.Run(t.Context(), d, newAgent(t, srv, robby.WithTools(lookup)))
	require.NoError(t, err)
	require.Len(t, rep.Cases[0].Failures, 1)
	return rep
}

// TestHTMLEscapesHostileText: the page shows the failing conversation,
// every word of the model's escaped, and loads nothing from elsewhere.
func TestHTMLEscapesHostileText(t *testing.T) {
	var page bytes.Buffer
	require.NoError(t, hostileReport(t).WriteHTML(&page))
	html := page.String()
	for _, bad := range []string{"<script>", "<img", "<b onclick", "<i>hostile", "<b>Norway"} {
		assert.NotContains(t, html, bad)
	}
	assert.Contains(t, html, "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;")
	assert.Contains(t, html, "&lt;b onclick=&#34;x&#34;&gt;case&lt;/b&gt;")
	assert.Contains(t, html, "<details>", "the failing run folds")
	assert.Contains(t, html, "lookup({&#34;country&#34;:&#34;&lt;b&gt;Norway&lt;/b&gt;&#34;})", "the tool call is shown")
	assert.Equal(t, 1, strings.Count(html, "</details>"), "the answer cannot close the fold")
	for _, remote := range []string{"http://", "https://", "//cdn", "<link", "<script"} {
		assert.NotContains(t, html, remote, "self-contained")
	}
}

// TestTableEscapesControls: the terminal table cannot be driven by the
// model's text.
func TestTableEscapesControls(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, hostileReport(t).WriteTable(&out))
	text := out.String()
	assert.NotContains(t, text, "\x1b")
	assert.NotContains(t, text, "\x07")
	assert.Contains(t, text, "CASE")
	assert.Contains(t, text, "1 of 1 cases failed")
	assert.Contains(t, text, `<b onclick="x">case</b>, run 0: contains: the answer`)
}
