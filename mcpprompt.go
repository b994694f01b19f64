package robby

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
)

// An MCPPromptInfo is a prompt an MCP server offers: a conversation
// starter and the arguments it takes.
type MCPPromptInfo struct {
	Server string // the server's name
	*mcp.Prompt
}

// MCPPrompts lists the prompts of every connected MCP server, every page,
// in the servers' order.
func (a *Agent) MCPPrompts(ctx context.Context) ([]MCPPromptInfo, error) {
	conns, err := a.mcpConns(ctx)
	if err != nil {
		return nil, err
	}
	var out []MCPPromptInfo
	for _, c := range conns {
		s, err := c.live(ctx)
		if err != nil {
			return out, err
		}
		if init := s.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Prompts == nil {
			continue
		}
		for p, err := range s.Prompts(ctx, nil) {
			if err != nil {
				return out, c.hub.secrets.wrap(fmt.Errorf("MCP server %q: listing prompts: %w", c.spec.name, err))
			}
			out = append(out, MCPPromptInfo{Server: c.spec.name, Prompt: p})
		}
	}
	return out, nil
}

// MCPPrompt gets the named prompt of an MCP server as messages, filled in
// with args. To start or continue a conversation with them, give them to
// [Agent.AddMessages], then call [Agent.Resume] for the model's answer.
// Text and embedded text resources become text. Images in user messages
// become image parts. Other contents are described.
func (a *Agent) MCPPrompt(ctx context.Context, server, name string, args map[string]string) ([]openai.ChatCompletionMessageParamUnion, error) {
	c, s, err := a.mcpSession(ctx, server)
	if err != nil {
		return nil, err
	}
	res, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: maps.Clone(args)})
	if err != nil {
		return nil, c.hub.secrets.wrap(fmt.Errorf("MCP server %q: prompt %q: %w", server, name, err))
	}
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(res.Messages))
	for _, m := range res.Messages {
		if m == nil || m.Content == nil {
			continue
		}
		msgs = append(msgs, mcpPromptMessage(m))
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("robby: MCP server %q: prompt %q has no messages", server, name)
	}
	return msgs, nil
}

// mcpPromptMessage turns a prompt's message into a chat message.
func mcpPromptMessage(m *mcp.PromptMessage) openai.ChatCompletionMessageParamUnion {
	if m.Role == "assistant" {
		return openai.AssistantMessage(promptText(m.Content))
	}
	if img, ok := m.Content.(*mcp.ImageContent); ok {
		return openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
				URL: "data:" + img.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)}),
		})
	}
	return openai.UserMessage(promptText(m.Content))
}

func promptText(c mcp.Content) string {
	if r, ok := c.(*mcp.EmbeddedResource); ok && r.Resource != nil && r.Resource.Blob == nil {
		return fenceResource(r.Resource.URI, r.Resource.Text)
	}
	return renderContent(c)
}

// CompleteMCPPrompt asks an MCP server for the values that an argument of
// one of its prompts may take, starting with value. known holds the
// arguments given already; some servers use them to narrow the choice. A
// server without completions gives none.
func (a *Agent) CompleteMCPPrompt(ctx context.Context, server, prompt, argument, value string, known map[string]string) ([]string, error) {
	c, s, err := a.mcpSession(ctx, server)
	if err != nil {
		return nil, err
	}
	if init := s.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Completions == nil {
		return nil, nil
	}
	params := &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: prompt},
		Argument: mcp.CompleteParamsArgument{Name: argument, Value: value},
	}
	if len(known) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: maps.Clone(known)}
	}
	res, err := s.Complete(ctx, params)
	if err != nil {
		return nil, c.hub.secrets.wrap(fmt.Errorf("MCP server %q: completing %s of prompt %q: %w", server, argument, prompt, err))
	}
	return res.Completion.Values, nil
}
