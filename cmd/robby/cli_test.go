package main

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// TestHelpOnEveryCommand: -h prints the same kind of help for every
// subcommand, on stdout, with the environment variables it reads, and
// exits 0.
func TestHelpOnEveryCommand(t *testing.T) {
	for _, name := range []string{"run", "chat", "serve", "mcp", "index", "eval", "worker"} {
		for _, flag := range []string{"-h", "-help", "--help"} {
			t.Run(name+flag, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				err := run(t.Context(), []string{name, flag}, strings.NewReader(""), &stdout, &stderr)
				require.NoError(t, err)
				assert.Equal(t, 0, exitCode(err, &stderr))
				assert.Empty(t, stderr.String())
				help := stdout.String()
				assert.True(t, strings.HasPrefix(help, "usage: robby "+name), help)
				for _, want := range []string{"Flags:", "-base-url", "-kb", "Environment:", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ROBBY_EMBEDDINGS_MODEL"} {
					assert.Contains(t, help, want)
				}
				if name != "index" {
					for _, want := range []string{"-model", "ROBBY_MODEL", "-budget-calls", "-budget-tokens", "-budget-cost", "-prices"} {
						assert.Contains(t, help, want)
					}
				}
				if name == "run" || name == "mcp" {
					for _, want := range []string{"-schema", "-answer-mode", "-max-repairs"} {
						assert.Contains(t, help, want)
					}
				}
				if name == "serve" || name == "mcp" {
					assert.Contains(t, help, "ROBBY_TOKEN")
					assert.Contains(t, help, "-insecure-no-token")
				}
				if name == "serve" {
					assert.Contains(t, help, `(default "127.0.0.1:8080")`)
					assert.Contains(t, help, "-insecure-no-token")
					assert.Contains(t, help, "-cors")
				}
			})
		}
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-no-such-flag"}, nil, &stdout, &stderr)
	assert.Equal(t, 2, exitCode(err, &stderr), "a bad flag is a usage error")
	assert.Contains(t, stderr.String(), "usage: robby run")
	assert.Equal(t, 1, strings.Count(stderr.String(), "flag provided but not defined: -no-such-flag"), stderr.String())
}

// TestHelpReadsTheTable: robby -h lists every command of the table with
// its summary, and robby help CMD prints what CMD -h prints.
func TestHelpReadsTheTable(t *testing.T) {
	var usage bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-h"}, nil, &usage, io.Discard))
	for _, spec := range commands() {
		assert.Regexp(t, `(?m)^  `+spec.name+` +`+regexp.QuoteMeta(spec.summary)+`$`, usage.String())
		var help, flagHelp, stderr bytes.Buffer
		err := run(t.Context(), []string{"help", spec.name}, nil, &help, &stderr)
		require.NoError(t, err, stderr.String())
		require.NoError(t, run(t.Context(), []string{spec.name, "-h"}, nil, &flagHelp, io.Discard))
		assert.Equal(t, flagHelp.String(), help.String(), spec.name)
		assert.True(t, strings.HasPrefix(help.String(), "usage: robby "+spec.name), help.String())
	}
	var help bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"help"}, nil, &help, io.Discard))
	assert.Equal(t, usage.String(), help.String())

	var stderr bytes.Buffer
	err := run(t.Context(), []string{"help", "fly"}, nil, io.Discard, &stderr)
	assert.Equal(t, 2, exitCode(err, &stderr))
	assert.Contains(t, stderr.String(), `unknown command "fly"`)
}

// TestNoArgumentsWhereNoneAreTaken: a command that takes no arguments
// refuses one rather than ignoring it.
func TestNoArgumentsWhereNoneAreTaken(t *testing.T) {
	for _, args := range [][]string{{"serve", "8080"}, {"chat", "hello"}, {"mcp", "-http", "x"}, {"worker", "q"}} {
		var stderr bytes.Buffer
		err := run(t.Context(), args, nil, io.Discard, &stderr)
		assert.Equal(t, 2, exitCode(err, &stderr), args)
		assert.Contains(t, stderr.String(), "takes no arguments besides its flags", args)
	}
}

// TestOneRobbyPrefix: an error is printed with one "robby: " in front, by
// run and by chat, whether the library made it (it begins "robby: " itself)
// or only wrapped it (a refused connection).
func TestOneRobbyPrefix(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-base-url", "http://127.0.0.1:1/v1", "hi"}, nil, io.Discard, &stderr)
	require.Error(t, err)
	require.ErrorContains(t, err, "connection refused")
	assert.Equal(t, 1, exitCode(err, &stderr))
	assert.True(t, strings.HasPrefix(stderr.String(), "robby: "), stderr.String())
	assert.Equal(t, 1, strings.Count(stderr.String(), "robby:"), stderr.String())

	srv := upstream(t, robbytest.Error(500, "overloaded"), robbytest.Error(500, "overloaded"), robbytest.Error(500, "overloaded"))
	stderr.Reset()
	err = run(t.Context(), []string{"chat", "-base-url", srv.URL}, strings.NewReader("hi\n"), io.Discard, &stderr)
	require.Error(t, err)
	assert.NotContains(t, stderr.String(), "robby: robby:")
	assert.Contains(t, stderr.String(), "robby: endpoint returned 500")
}

// TestErrorsNameFlags: a bad value is reported with the flag or variable
// the user set, not the library's option.
func TestErrorsNameFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "-model", "", "hi"}, "no model: give -model or set ROBBY_MODEL"},
		{[]string{"run", "-max-turns", "0", "hi"}, "-max-turns is 0: it must be at least 1"},
		{[]string{"run", "-budget-tokens", "-1", "hi"}, "-budget-tokens is -1: give a number of tokens, or 0 for no limit"},
		{[]string{"run", "-base-url", "127.0.0.1:8080/v1", "hi"}, `bad -base-url (or OPENAI_BASE_URL) "127.0.0.1:8080/v1"`},
		{[]string{"run", "-base-url", "ftp://host/v1", "hi"}, "not an http:// or https:// URL"},
		{[]string{"serve", "-max-messages", "0"}, "-max-messages is 0"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv("OPENAI_BASE_URL", "")
			t.Setenv("ROBBY_MODEL", "")
			var stderr bytes.Buffer
			err := run(t.Context(), tt.args, nil, io.Discard, io.Discard)
			require.Error(t, err)
			assert.Equal(t, 1, exitCode(err, &stderr))
			assert.Contains(t, stderr.String(), tt.want)
			assert.NotRegexp(t, `With[A-Z]`, stderr.String(), "a Go option's name")
		})
	}
}

// TestChatExitStatus: chat exits 1 when its last answer failed, 0 when an
// earlier one failed and the last succeeded.
func TestChatExitStatus(t *testing.T) {
	fail := robbytest.Error(400, `{"error":{"message":"bad request"}}`)
	srv := upstream(t, robbytest.Text("first"), fail)
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"chat", "-base-url", srv.URL}, strings.NewReader("one\ntwo\n"), io.Discard, &stderr)
	assert.Equal(t, 1, exitCode(err, &stderr))
	assert.Equal(t, 1, strings.Count(stderr.String(), "bad request"), "the failure is printed once: %s", stderr.String())

	srv = upstream(t, fail, robbytest.Text("second"))
	err = run(t.Context(), []string{"chat", "-base-url", srv.URL}, strings.NewReader("one\ntwo\n"), io.Discard, io.Discard)
	assert.Equal(t, 0, exitCode(err, io.Discard))
}

// TestChatExitAndHelp: /exit and /quit end chat with status 0, the lines
// after them unread; /help lists chat's commands; "exit" without the slash
// is a prompt.
func TestChatExitAndHelp(t *testing.T) {
	for _, exit := range []string{"/exit", "/quit"} {
		srv := upstream(t, robbytest.Error(400, `{"error":{"message":"bad request"}}`))
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), []string{"chat", "-base-url", srv.URL}, strings.NewReader("one\n"+exit+"\nnever sent\n"), &stdout, &stderr)
		assert.Equal(t, 0, exitCode(err, io.Discard), "%s: %s", exit, stderr.String())
		assert.Len(t, srv.Requests(), 1, exit)
	}

	srv := upstream(t, robbytest.Text("Bye."))
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"chat", "-base-url", srv.URL}, strings.NewReader("/help\nexit\n"), &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	for _, want := range []string{"/help lists the commands", "/help, /?", "/exit, /quit", "//text", "No MCP prompts"} {
		assert.Contains(t, stderr.String(), want)
	}
	assert.Equal(t, "Bye.\n", stdout.String(), "exit without a slash is a prompt")
}

// TestServeNeedsATokenOffLoopback: robby serve listens on 127.0.0.1:8080
// by default; on another address it refuses to start without a token,
// saying how to set one, unless told -insecure-no-token.
func TestServeNeedsATokenOffLoopback(t *testing.T) {
	srv := upstream(t)
	t.Setenv("ROBBY_TOKEN", "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		var stderr bytes.Buffer
		err := run(t.Context(), []string{"serve", "-addr", addr, "-base-url", srv.URL}, nil, io.Discard, &stderr)
		require.Error(t, err, addr)
		assert.Equal(t, 1, exitCode(err, &stderr))
		for _, want := range []string{"without a token", "-token", "ROBBY_TOKEN", "-insecure-no-token"} {
			assert.Contains(t, stderr.String(), want, addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:80", "localhost:80", "[::1]:80", "127.1.2.3:80"} {
		assert.True(t, isLoopback(addr), addr)
	}

	// Open with the token from the environment, or when told to be.
	t.Setenv("ROBBY_TOKEN", "from-env")
	srv.Reply(robbytest.Text("served"))
	base, _ := serveInProcess(t, "-addr", "0.0.0.0:0", "-base-url", srv.URL, "-model", "agent")
	base = strings.Replace(base, "0.0.0.0", "127.0.0.1", 1)
	assert.Equal(t, "served", streamFrom(t, base, "from-env", "hi"))

	t.Setenv("ROBBY_TOKEN", "")
	srv.Reply(robbytest.Text("open"))
	base, stderr := serveInProcess(t, "-addr", "0.0.0.0:0", "-insecure-no-token", "-base-url", srv.URL, "-model", "agent")
	base = strings.Replace(base, "0.0.0.0", "127.0.0.1", 1)
	assert.Equal(t, "open", streamFrom(t, base, "none", "hi"))
	assert.Contains(t, stderr.String(), "warning: no token")
}

// TestServeCORSFlag: -cors lists the web origins whose pages may call the
// endpoint; others get no permission.
func TestServeCORSFlag(t *testing.T) {
	srv := upstream(t)
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-cors", "https://a.example,https://b.example")
	preflight := func(origin string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, base+"/chat/completions", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	for _, o := range []string{"https://a.example", "https://b.example"} {
		res := preflight(o)
		assert.Equal(t, http.StatusNoContent, res.StatusCode)
		assert.Equal(t, o, res.Header.Get("Access-Control-Allow-Origin"))
	}
	res := preflight("https://evil.example")
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
}
