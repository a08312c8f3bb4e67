package mcptool

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools"
)

// An image over the limit a tool result may carry is left out and said, as
// the read tool does; one at the limit is passed on; isError is kept.
func TestConvertImageLimit(t *testing.T) {
	r := convert(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, tools.MaxImageBytes+1)},
		&mcp.ImageContent{MIMEType: "image/jpeg", Data: make([]byte, tools.MaxImageBytes)},
	}})
	if !r.IsError || len(r.Content) != 2 || r.Content[0].Type != llm.ContentText || r.Content[1].Type != llm.ContentImage || r.Content[1].MimeType != "image/jpeg" {
		t.Fatalf("got %d parts (error %v), want the text and the jpeg", len(r.Content), r.IsError)
	}
	if !strings.Contains(r.Content[0].Text, "[image image/png of 5.0MB left out: over the 5.0MB limit]") {
		t.Errorf("text %q", r.Content[0].Text)
	}
}
