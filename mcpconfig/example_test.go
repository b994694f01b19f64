package mcpconfig_test

import (
	"fmt"
	"log"

	"github.com/robby-go/robby/mcpconfig"
)

func ExampleParse() {
	servers, err := mcpconfig.Parse([]byte(`{
		"mcpServers": {
			"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
			"search": {"url": "http://localhost:3001/mcp", "headers": {"Authorization": "Bearer token"}}
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range servers {
		fmt.Println(s.Name())
	}
	// Output:
	// files
	// search
}
