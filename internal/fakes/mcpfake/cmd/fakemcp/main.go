// Command fakemcp is the fake MCP server (package mcpfake) on stdio.
package main

import (
	"context"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
)

func main() {
	s := mcpfake.New(func() { os.Exit(3) })
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
