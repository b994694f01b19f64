package a2aserver

import (
	"context"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// baseKey is the context key of the base URL a card request reached.
type baseKey struct{}

// bearerScheme is the card's name of the bearer-token security scheme.
const bearerScheme = "bearer"

// baseURL is where clients reach the handler: Options.PublicURL, else the
// request's own scheme and host.
func (h *Handler) baseURL(r *http.Request) string {
	if h.opts.PublicURL != "" {
		return strings.TrimSuffix(h.opts.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// cardOf builds the agent card, its interfaces under the base URL the
// request reached.
func (h *Handler) cardOf(ctx context.Context) (*a2a.AgentCard, error) {
	base, _ := ctx.Value(baseKey{}).(string)
	name := h.opts.Name
	if name == "" {
		name = h.agent.Name()
	}
	if name == "" {
		name = "robby"
	}
	desc := h.opts.Description
	if desc == "" {
		desc = "The robby agent " + name + "."
	}
	version := h.opts.Version
	if version == "" {
		version = "1.0.0"
	}
	card := &a2a.AgentCard{
		Name:        name,
		Description: desc,
		Version:     version,
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+JSONRPCPath, a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(base+RESTPath, a2a.TransportProtocolHTTPJSON),
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             h.skills(name, desc),
	}
	// A scheme declared is one enforced: clients and the conformance suite
	// take it so.
	if len(h.opts.Tokens) > 0 {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{bearerScheme: a2a.HTTPAuthSecurityScheme{
			Scheme: "Bearer", Description: "Given by the server's operator."}}
		card.SecurityRequirements = a2a.SecurityRequirementsOptions{{bearerScheme: {}}}
	}
	return card, nil
}

// skills are the agent's tools, each a skill. An agent without tools
// has one: answering, named for the agent.
func (h *Handler) skills(name, desc string) []a2a.AgentSkill {
	var skills []a2a.AgentSkill
	for _, t := range h.agent.Tools() {
		skills = append(skills, a2a.AgentSkill{ID: t.Name(), Name: t.Name(), Description: t.Description(),
			Tags: []string{"tool"}})
	}
	if len(skills) == 0 {
		skills = append(skills, a2a.AgentSkill{ID: "chat", Name: name, Description: desc, Tags: []string{"chat"}})
	}
	return skills
}
