// Command client is an MCP conformance client built on robby's MCP layer. It is
// for the official conformance suite (@modelcontextprotocol/conformance):
//
//	conformance client --command "/path/to/client" --scenario initialize
//
// The suite runs it with the URL of a scripted MCP server as its last argument.
// The scenario's name is in MCP_CONFORMANCE_SCENARIO. Some scenarios give a
// JSON context in MCP_CONFORMANCE_CONTEXT. The client connects the way an agent
// does, with [robby.New] and [robby.MCPStreamableHTTP]. It does the scenario's
// actions through the agent: [robby.Agent.Tools] lists the tools, and
// [robby.Agent.ExecuteToolCalls] calls them. The model is never contacted.
//
// The scenarios are those of the go-sdk's conformance/everything-client. Every
// auth/* scenario connects through [robby.MCPServer.WithOAuth] with a handler
// of package mcpoauth. It then lists the tools and calls test-tool. The
// client-credentials scenarios use the client_credentials grant; the others use
// the authorization code. There the suite's authorization server approves at
// once. So the authorization URL is fetched without a browser, and the code
// read from its redirect.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/mcpoauth"
)

// A scenario does its actions with an agent connected to the server.
type scenario struct {
	// elicit sets the server's elicitation handler, for the scenarios
	// whose server asks the client for input.
	elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// oauth makes the OAuth handler of the auth/* scenarios, for the
	// server at url.
	oauth func(url string, cfg map[string]any) (auth.OAuthHandler, error)
	run   func(ctx context.Context, a *robby.Agent, cfg map[string]any) error
}

// authScenario is what every auth/* scenario does once authorized.
var authScenario = scenario{oauth: oauthHandler, run: func(ctx context.Context, a *robby.Agent, _ map[string]any) error {
	return mustCall(ctx, a, "test-tool", map[string]any{})
}}

// clientCredentialsScenario authorizes as a machine, with the
// client_credentials grant.
var clientCredentialsScenario = scenario{oauth: func(url string, cfg map[string]any) (auth.OAuthHandler, error) {
	id, _ := cfg["client_id"].(string)
	secret, _ := cfg["client_secret"].(string)
	return mcpoauth.New(url, mcpoauth.WithClientCredentials(id, secret))
}, run: authScenario.run}

// redirectURL is where the suite's authorization server sends the code.
const redirectURL = "http://localhost:3000/callback"

// oauthHandler registers the client whichever way the authorization server
// supports first. It uses a client ID metadata document, the credentials the
// scenario gives, or dynamic registration.
func oauthHandler(url string, cfg map[string]any) (auth.OAuthHandler, error) {
	opts := []mcpoauth.Option{
		mcpoauth.WithAuthorizationCodeFetcher(redirectURL, fetchCode),
		mcpoauth.WithClientMetadataURL("https://conformance-test.local/client-metadata.json"),
	}
	id, _ := cfg["client_id"].(string)
	secret, _ := cfg["client_secret"].(string)
	if id != "" && secret != "" {
		opts = append(opts, mcpoauth.WithClient(id, secret))
	}
	return mcpoauth.New(url, opts...)
}

// fetchCode plays the user: it opens the authorization URL, which the
// suite's server answers with a redirect carrying the code.
func fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, fmt.Errorf("authorization redirect: %w", err)
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

var scenarios = map[string]scenario{
	// Connecting lists the tools: that is the whole scenario.
	"initialize":               {run: listTools},
	"request-metadata":         {run: listTools},
	"json-schema-ref-no-deref": {run: listTools},
	// robby is not a skills host (SEP-2640): it connects, lists tools and
	// never reads a skill's files, so the referee skips its checks.
	"sep-2640-client-no-prefetch":        {run: listTools},
	"sep-2640-client-verify-digest":      {run: listTools},
	"sep-2640-client-verify-size":        {run: listTools},
	"sep-2640-client-verify-frontmatter": {run: listTools},

	"tools_call": {run: func(ctx context.Context, a *robby.Agent, _ map[string]any) error {
		return mustCall(ctx, a, "add_numbers", map[string]any{"a": 5, "b": 3})
	}},
	"elicitation-sep1034-client-defaults": {
		// Accept with nothing filled in: the defaults of the requested
		// schema are applied to the answer.
		elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
		run: func(ctx context.Context, a *robby.Agent, _ map[string]any) error {
			return mustCall(ctx, a, "test_client_elicitation_defaults", map[string]any{})
		},
	},
	"sse-retry": {run: func(ctx context.Context, a *robby.Agent, _ map[string]any) error {
		return mustCall(ctx, a, "test_reconnection", map[string]any{})
	}},
	"json-schema-2020-12-preservation": {run: echoSchema},
	"sep-2322-client-request-state": {
		elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
		},
		run: func(ctx context.Context, a *robby.Agent, _ map[string]any) error {
			// Some of these are refused on purpose: the referee checks what
			// was sent, not what came back.
			for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
				if err := call(ctx, a, name, map[string]any{}); err != nil {
					log.Printf("%s: %v", name, err)
				}
			}
			return nil
		},
	},
	"http-standard-headers": {run: func(ctx context.Context, a *robby.Agent, _ map[string]any) error {
		// robby offers tools only: the resources and prompts checks are
		// skipped by the referee.
		tools := a.Tools()
		if len(tools) == 0 {
			return errors.New("no tools")
		}
		for _, t := range tools {
			if err := call(ctx, a, t.Name(), map[string]any{}); err != nil {
				log.Printf("%s: %v", t.Name(), err)
			}
		}
		return nil
	}},
	"http-custom-headers": {run: func(ctx context.Context, a *robby.Agent, cfg map[string]any) error {
		calls, _ := cfg["toolCalls"].([]any)
		if len(calls) == 0 {
			return errors.New("no toolCalls in MCP_CONFORMANCE_CONTEXT")
		}
		for _, c := range calls {
			c, _ := c.(map[string]any)
			name, _ := c["name"].(string)
			args, _ := c["arguments"].(map[string]any)
			if args == nil {
				args = map[string]any{}
			}
			if err := call(ctx, a, name, args); err != nil {
				log.Printf("%s: %v", name, err)
			}
		}
		return nil
	}},
	"http-invalid-tool-headers": {run: func(ctx context.Context, a *robby.Agent, _ map[string]any) error {
		// The tools whose x-mcp-header annotations are invalid must have
		// been left out; call every one that was kept.
		for _, t := range a.Tools() {
			if err := call(ctx, a, t.Name(), map[string]any{"region": "us-west1"}); err != nil {
				log.Printf("%s: %v", t.Name(), err)
			}
		}
		return nil
	}},
}

func listTools(_ context.Context, a *robby.Agent, _ map[string]any) error {
	log.Printf("%d tools", len(a.Tools()))
	return nil
}

// echoSchema sends the focal tool's input schema, as robby gives it to the
// model, back to the server. The server checks that no keyword was lost.
func echoSchema(ctx context.Context, a *robby.Agent, _ map[string]any) error {
	const focal = "json_schema_2020_12_tool"
	i := slices.IndexFunc(a.Tools(), func(t robby.Tool) bool { return t.Name() == focal })
	if i < 0 {
		return fmt.Errorf("tool %q not found", focal)
	}
	return mustCall(ctx, a, "json_schema_echo", map[string]any{"schema": a.Tools()[i].Parameters()})
}

// call calls a tool through the agent and returns the error the model
// would have read.
func call(ctx context.Context, a *robby.Agent, name string, args map[string]any) error {
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	results, err := a.ExecuteToolCalls(ctx, []robby.ToolCall{{ID: "call_" + name, Name: name, Arguments: string(b)}})
	if err != nil {
		return err
	}
	r := results[0]
	if r.Err != nil {
		return r.Err
	}
	log.Printf("%s: %s", name, r.Output)
	return nil
}

// mustCall is call for a tool that must exist and succeed.
func mustCall(ctx context.Context, a *robby.Agent, name string, args map[string]any) error {
	if !slices.ContainsFunc(a.Tools(), func(t robby.Tool) bool { return t.Name() == name }) {
		return fmt.Errorf("tool %q not found", name)
	}
	if err := call(ctx, a, name, args); err != nil {
		return fmt.Errorf("calling %s: %w", name, err)
	}
	return nil
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("robby-conformance: ")
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	s, ok := scenarios[name]
	switch {
	case strings.HasPrefix(name, "auth/client-credentials-"):
		s, ok = clientCredentialsScenario, true
	case strings.HasPrefix(name, "auth/"):
		s, ok = authScenario, true
	}
	if len(os.Args) < 2 || !ok {
		names := make([]string, 0, len(scenarios))
		for n := range scenarios {
			names = append(names, n)
		}
		sort.Strings(names)
		log.Fatalf("usage: MCP_CONFORMANCE_SCENARIO=name %s [args] URL\nscenario %q unknown; the scenarios are:\n  %s",
			os.Args[0], name, strings.Join(names, "\n  "))
	}
	url := os.Args[len(os.Args)-1]
	var cfg map[string]any
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &cfg); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	if err := run(s, url, cfg); err != nil {
		log.Fatalf("scenario %s: %v", name, err)
	}
}

func run(s scenario, url string, cfg map[string]any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second) // the suite allows 30 s
	defer cancel()
	server := robby.MCPStreamableHTTP("conformance", url).WithConnectTimeout(10 * time.Second)
	if s.elicit != nil {
		server = server.WithElicitation(s.elicit)
	}
	if s.oauth != nil {
		h, err := s.oauth(url, cfg)
		if err != nil {
			return err
		}
		server = server.WithOAuth(h)
	}
	a, err := robby.New(robby.WithModel("conformance"), robby.WithMCP(server))
	if err != nil {
		return err
	}
	err = s.run(ctx, a, cfg)
	if cerr := a.Close(); cerr != nil {
		log.Printf("closing: %v", cerr)
	}
	return err
}
