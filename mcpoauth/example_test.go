package mcpoauth_test

import (
	"encoding/base64"
	"log"
	"os"
	"path/filepath"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/mcpoauth"
)

// A remote MCP server that needs OAuth: the user authorizes in the browser
// the first time, and the tokens are kept, encrypted, for the next runs.
func Example() {
	const server = "https://mcp.example.com/mcp"
	key, err := base64.StdEncoding.DecodeString(os.Getenv("ROBBY_TOKEN_KEY")) // openssl rand -base64 32
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		log.Fatal(err)
	}
	store, err := mcpoauth.NewFileStore(filepath.Join(dir, "myapp", "mcp-tokens"), key)
	if err != nil {
		log.Fatal(err)
	}
	h, err := mcpoauth.New(server, mcpoauth.WithTokenStore(store))
	if err != nil {
		log.Fatal(err)
	}
	agent, err := robby.New(robby.WithModel("ai/qwen2.5"),
		robby.WithMCP(robby.MCPStreamableHTTP("example", server).WithOAuth(h)))
	if err != nil {
		log.Fatal(err)
	}
	defer agent.Close()
}

// A machine with a client registered beforehand: the client_credentials
// grant, no user and no browser.
func ExampleWithClientCredentials() {
	const server = "https://mcp.example.com/mcp"
	h, err := mcpoauth.New(server, mcpoauth.WithClientCredentials("build-bot", os.Getenv("MCP_CLIENT_SECRET")))
	if err != nil {
		log.Fatal(err)
	}
	_ = robby.MCPStreamableHTTP("example", server).WithOAuth(h)
}
