// Command fakemcp is the fake MCP server (package mcpfake) on stdio. With
// $FAKEMCP_STDERR_ENV set it first writes its environment to stderr.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
)

func main() {
	if os.Getenv("FAKEMCP_STDERR_ENV") != "" {
		// As a careless server might: its environment on stderr.
		for _, kv := range os.Environ() {
			fmt.Fprintln(os.Stderr, kv)
		}
	}
	s := mcpfake.New(func() { os.Exit(3) })
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
