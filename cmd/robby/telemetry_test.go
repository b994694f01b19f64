package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/robby-go/robby/robbytest"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/CLI.md from the command table, and the span tree in docs/OBSERVABILITY.md with this run's")

// weatherMCP serves two tools over streamable HTTP, as a remote MCP server
// would, and returns the -mcp file naming it.
func weatherMCP(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	type city struct {
		City string `json:"city"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "forecast", Description: "Today's weather in a city"},
		func(context.Context, *mcp.CallToolRequest, city) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "18°C, sunny"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "local_time", Description: "The time in a city"},
		func(context.Context, *mcp.CallToolRequest, city) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "14:05"}}}, nil, nil
		})
	return mcpOverHTTP(t, "weather", s)
}

// weatherModel is a model that calls both tools at once, then answers.
func weatherModel(t *testing.T) *robbytest.Server {
	forecast, clock := robbytest.Call("forecast", `{"city":"Paris"}`), robbytest.Call("local_time", `{"city":"Paris"}`)
	forecast.ID, clock.ID = "call_1", "call_2"
	return upstream(t,
		robbytest.ToolCalls(forecast, clock).WithUsage(412, 38),
		robbytest.Text("It is 18°C and sunny in Paris, where it is 14:05.").WithUsage(498, 21),
	)
}

// varying are the parts of a span tree that change from run to run.
var varying = regexp.MustCompile(`\d+(\.\d+)?(µs|ms|s)\b|:\d+\b`)

// TestTraceTreeInDocs runs robby run -trace and checks that the tree it
// prints is the one docs/OBSERVABILITY.md shows, durations and ports
// aside. -update-docs writes this run's tree into the doc.
func TestTraceTreeInDocs(t *testing.T) {
	srv := weatherModel(t)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-trace", "-base-url", srv.URL, "-model", "qwen3", "-mcp", weatherMCP(t),
		"What is the weather in Paris, and what time is it there?"}, nil, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "It is 18°C and sunny in Paris, where it is 14:05.\n", stdout.String())
	out := stderr.String()
	i := strings.Index(out, "invoke_agent")
	require.GreaterOrEqual(t, i, 0, "no tree in stderr:\n%s", out)
	tree := out[i:]

	const doc = "../../docs/OBSERVABILITY.md"
	const open, close = "<!-- span tree: TestTraceTreeInDocs -->\n```text\n", "```\n"
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	text := string(b)
	start := strings.Index(text, open)
	require.GreaterOrEqual(t, start, 0, "the doc has no span tree marker")
	start += len(open)
	end := start + strings.Index(text[start:], close)
	if *updateDocs {
		require.NoError(t, os.WriteFile(doc, []byte(text[:start]+tree+text[end:]), 0o644))
		return
	}
	assert.Equal(t, varying.ReplaceAllString(text[start:end], "…"), varying.ReplaceAllString(tree, "…"),
		"the doc's span tree is not this run's; rewrite it with go test ./cmd/robby -run TestTraceTreeInDocs -update-docs")
}

// TestTraceTreeAfterTheAnswer runs robby run and chat with -trace, stdout
// and stderr one terminal: each run's tree comes after its answer's line
// and what it spent, never on the answer's line (the run's span ends
// before the answer's newline is written: chat printed
// "…14:05.invoke_agent qwen3  3ms").
func TestTraceTreeAfterTheAnswer(t *testing.T) {
	const answer = "It is 18°C and sunny in Paris, where it is 14:05.\n"
	for _, args := range [][]string{
		{"run", "-trace", "-v"},
		{"chat", "-trace", "-v"},
	} {
		t.Run(args[0], func(t *testing.T) {
			srv := weatherModel(t)
			var stdin io.Reader
			args := append(args, "-base-url", srv.URL, "-model", "qwen3", "-mcp", weatherMCP(t))
			if args[0] == "run" {
				args = append(args, "What is the weather in Paris?")
			} else {
				stdin = strings.NewReader("What is the weather in Paris?\n")
			}
			terminal := &syncBuffer{}
			require.NoError(t, run(t.Context(), args, stdin, terminal, terminal))
			out := terminal.String()
			i, j := strings.Index(out, answer), strings.Index(out, "invoke_agent")
			require.True(t, i >= 0 && j >= 0, "no answer or no tree:\n%s", out)
			assert.Greater(t, j, i, "the tree before the answer:\n%s", out)
			assert.Equal(t, "\n", out[j-1:j], "the tree does not start a line:\n%s", out)
			assert.Less(t, strings.Index(out, "robby: 2 model requests"), j, "what the answer spent after the tree:\n%s", out)
		})
	}
}

// TestMCPStatusPrinted checks that run, chat and serve say at start which
// MCP servers are up and, once, why an optional one was left out (the
// agent's warning said it a second time, and the line named the server
// twice).
func TestMCPStatusPrinted(t *testing.T) {
	for _, cmd := range []string{"run", "chat", "serve"} {
		t.Run(cmd, func(t *testing.T) {
			var servers map[string]any
			b, err := os.ReadFile(weatherMCP(t))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &servers))
			servers["mcpServers"].(map[string]any)["gone"] = map[string]any{"command": filepath.Join(t.TempDir(), "missing"), "optional": true}
			config := filepath.Join(t.TempDir(), "mcp.json")
			b, err = json.Marshal(servers)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(config, b, 0o600))

			srv := weatherModel(t)
			args := []string{cmd, "-base-url", srv.URL, "-model", "qwen3", "-mcp", config}
			stderr := &syncBuffer{}
			switch cmd {
			case "run":
				require.NoError(t, run(t.Context(), append(args, "What is the weather in Paris?"), nil, io.Discard, stderr))
			case "chat":
				require.NoError(t, run(t.Context(), args, strings.NewReader(""), io.Discard, stderr))
			case "serve":
				ctx, cancel := context.WithCancel(t.Context())
				var done <-chan error
				_, stderr, done = startServe(ctx, t, append(args[1:], "-addr", "127.0.0.1:0")...)
				cancel()
				<-done
			}
			out := stderr.String()
			assert.Contains(t, out, "robby: MCP server weather (http): 2 tools\n")
			assert.Regexp(t, `robby: MCP server gone \(stdio\) left out: connecting: fork/exec \S+/missing: no such file or directory\n`, out)
			assert.Equal(t, 1, strings.Count(out, `gone`), "the server left out is named more than once:\n%s", out)
		})
	}
}

// collector is an OTLP/HTTP collector that keeps what it receives.
type collector struct {
	mu      sync.Mutex
	spans   []string // span names
	service []string // service.name of each batch of spans
	metrics []string // metric names
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.URL.Path {
	case "/v1/traces":
		var req collectortrace.ExportTraceServiceRequest
		if proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					c.service = append(c.service, kv.Value.GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, s.Name)
				}
			}
		}
	case "/v1/metrics":
		var req collectormetrics.ExportMetricsServiceRequest
		if proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					c.metrics = append(c.metrics, m.Name)
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// TestOTelExportsOnExit runs robby run -otel against a collector: the
// spans and metrics of the run are exported before the command returns.
func TestOTelExportsOnExit(t *testing.T) {
	c := new(collector)
	hs := httptest.NewServer(c)
	defer hs.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hs.URL)
	t.Setenv("OTEL_SERVICE_NAME", "weather-agent")
	srv := weatherModel(t)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"run", "-otel", "-base-url", srv.URL, "-model", "qwen3", "-mcp", weatherMCP(t),
		"Weather in Paris?"}, nil, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.NotContains(t, stderr.String(), "invoke_agent", "no tree without -trace")

	c.mu.Lock()
	defer c.mu.Unlock()
	assert.ElementsMatch(t, []string{"chat qwen3", "execute_tool forecast", "execute_tool local_time", "chat qwen3", "invoke_agent"}, c.spans)
	assert.Contains(t, c.service, "weather-agent", "OTEL_SERVICE_NAME names the service")
	assert.Subset(t, c.metrics, []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "robby.tool.duration", "robby.runs"})
}
