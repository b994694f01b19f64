package robby

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/robbytest"
)

// server-everything's resources, templates, subscriptions and prompts,
// over stdio, streamable HTTP and SSE.
func TestMCPIntegrationResourcesAndPrompts(t *testing.T) {
	b := requireBench(t)
	const (
		doc     = "demo://resource/static/document/architecture.md"
		dynamic = "demo://resource/dynamic/text/7"
	)
	for _, tr := range b.everythingTransports() {
		t.Run(tr.name, func(t *testing.T) {
			a, srv := newBenchAgent(t, tr.server(t))
			ctx := benchContext(t)

			// Listed and read from Go.
			resources, err := a.MCPResources(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, resources)
			var uris []string
			for _, r := range resources {
				assert.Equal(t, "everything", r.Server)
				uris = append(uris, r.URI)
			}
			assert.Contains(t, uris, doc)
			read, err := a.ReadMCPResource(ctx, "everything", dynamic)
			require.NoError(t, err)
			require.Len(t, read.Contents, 1)
			const dynamicText = "Resource 7: This is a plaintext resource created at "
			assert.True(t, strings.HasPrefix(read.Contents[0].Text, dynamicText), read.Contents[0].Text)

			// Offered to the model: the listed resources and the
			// templates are in the tool's description.
			tool := benchTool(t, a, "read_resource")
			assert.Contains(t, tool.Description(), doc)
			assert.Contains(t, tool.Description(), "demo://resource/dynamic/text/{resourceId}")
			srv.Reply(
				robbytest.ToolCalls(robbytest.Call("read_resource", `{"uri":"`+dynamic+`"}`)),
				robbytest.Func(func(req robbytest.Request) robbytest.Reply {
					return robbytest.Text("It says: " + toolMessagesOf(req)[0])
				}),
			)
			res, err := a.Run(ctx, "read resource 7")
			require.NoError(t, err)
			uri, text := unfence(t, strings.TrimPrefix(res.Text, "It says: "))
			assert.Equal(t, dynamic, uri)
			assert.True(t, strings.HasPrefix(text, dynamicText), res.Text)

			// Attached to the next prompt.
			require.NoError(t, a.AttachMCPResource(ctx, "everything", doc))
			srv.Reply(robbytest.Text("Read."))
			_, err = a.Run(ctx, "summarize the document")
			require.NoError(t, err)
			reqs := srv.Requests()
			last := reqs[len(reqs)-1].Messages
			attached := last[len(last)-2]
			assert.Equal(t, "user", attached.Role)
			assert.Contains(t, string(reqs[len(reqs)-1].Body), `[resource `+doc+`]\n# Everything Server`)
			assert.Equal(t, "summarize the document", last[len(last)-1].Content)

			// Subscribed: once the model turns the server's simulated
			// updates on, it tells of one at once, then every 5 s.
			updates := make(chan string, 10)
			require.NoError(t, a.SubscribeMCPResource(ctx, "everything", doc, func(uri string) {
				select {
				case updates <- uri:
				default:
				}
			}))
			srv.Reply(robbytest.ToolCalls(robbytest.Call("toggle-subscriber-updates", `{}`)), robbytest.Text("On."))
			_, err = a.Run(ctx, "turn the updates on")
			require.NoError(t, err)
			select {
			case uri := <-updates:
				assert.Equal(t, doc, uri)
			case <-time.After(10 * time.Second):
				t.Fatal("no resources/updated notification")
			}

			// Prompts: listed, got, answered.
			prompts, err := a.MCPPrompts(ctx)
			require.NoError(t, err)
			byName := map[string]MCPPromptInfo{}
			for _, p := range prompts {
				byName[p.Name] = p
			}
			require.Contains(t, byName, "args-prompt")
			assert.Equal(t, "city", byName["args-prompt"].Arguments[0].Name)
			assert.True(t, byName["args-prompt"].Arguments[0].Required)

			msgs, err := a.MCPPrompt(ctx, "everything", "args-prompt", map[string]string{"city": "Lisbon"})
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			assert.Equal(t, "What's weather in Lisbon?", msgs[0].OfUser.Content.OfString.Value)
			a.AddMessages(msgs...)
			srv.Reply(robbytest.Text("Sunny."))
			res, err = a.Resume(ctx)
			require.NoError(t, err)
			assert.Equal(t, "Sunny.", res.Text)
			reqs = srv.Requests()
			last = reqs[len(reqs)-1].Messages
			assert.Equal(t, "What's weather in Lisbon?", last[len(last)-1].Content)

			// A prompt with an embedded resource.
			msgs, err = a.MCPPrompt(ctx, "everything", "resource-prompt", map[string]string{"resourceType": "Text", "resourceId": "3"})
			require.NoError(t, err)
			var texts []string
			for _, m := range msgs {
				if m.OfUser != nil && m.OfUser.Content.OfString.Valid() {
					texts = append(texts, m.OfUser.Content.OfString.Value)
				}
			}
			assert.Contains(t, strings.Join(texts, "\n"), "[resource demo://resource/dynamic/text/3]")

			// Completion of a prompt's argument.
			values, err := a.CompleteMCPPrompt(ctx, "everything", "completable-prompt", "department", "E", nil)
			require.NoError(t, err)
			assert.NotEmpty(t, values)
			for _, v := range values {
				assert.True(t, strings.HasPrefix(strings.ToLower(v), "e"), v)
			}

			_, err = a.MCPPrompt(ctx, "nobody", "args-prompt", nil)
			assert.ErrorContains(t, err, `no MCP server "nobody"`)
		})
	}
}
