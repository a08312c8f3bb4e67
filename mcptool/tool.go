package mcptool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
)

// tool is one of a server's tools as the session sees it.
type tool struct {
	c      *conn
	remote string // the server's name for it
	spec   llm.ToolSpec
}

func newTool(c *conn, t *mcp.Tool) (*tool, error) {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || len(schema) == 0 || string(schema) == "null" {
		schema = []byte(`{"type":"object","properties":{}}`)
	}
	var probe map[string]any
	if err := json.Unmarshal(schema, &probe); err != nil {
		return nil, fmt.Errorf("its input schema is not a JSON object: %w", err)
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = t.Title
	}
	desc = fmt.Sprintf("[MCP server %s, tool %s] %s", c.srv.Name, t.Name, desc)
	return &tool{
		c:      c,
		remote: t.Name,
		spec:   llm.ToolSpec{Name: ToolName(c.srv.Name, t.Name), Description: desc, Parameters: schema},
	}, nil
}

func (t *tool) Spec() llm.ToolSpec { return t.spec }

func (t *tool) Execute(ctx context.Context, call agent.ToolCall, _ func(agent.ToolResult)) (agent.ToolResult, error) {
	var args map[string]any
	if len(call.Args) > 0 {
		if err := json.Unmarshal(call.Args, &args); err != nil {
			return agent.ErrorResult("arguments must be a JSON object: " + err.Error()), nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, t.c.srv.Timeout)
	defer cancel()
	res, err := t.c.call(cctx, t.remote, args)
	switch {
	case ctx.Err() != nil:
		return agent.ErrorResult("[Aborted; the MCP server was told to cancel the call.]"), nil
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return agent.ErrorResult(fmt.Sprintf("[Timed out after %s; the MCP server was told to cancel the call.]", t.c.srv.Timeout)), nil
	case err != nil:
		return agent.ErrorResult(fmt.Sprintf("MCP server %s: %v", t.c.srv.Name, err)), nil
	}
	return convert(res), nil
}

// convert maps a call's result to a tool result with the built-in tools'
// limits: text joined and cut from the head, images passed on.
func convert(res *mcp.CallToolResult) agent.ToolResult {
	var text []string
	var images []llm.Content
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		case *mcp.ImageContent:
			if len(c.Data) > tools.MaxImageBytes {
				text = append(text, fmt.Sprintf("[image %s of %s left out: over the %s limit]", c.MIMEType,
					truncate.FormatSize(int64(len(c.Data))), truncate.FormatSize(tools.MaxImageBytes)))
				continue
			}
			images = append(images, llm.Image(c.MIMEType, base64.StdEncoding.EncodeToString(c.Data)))
		case *mcp.ResourceLink:
			line := "[resource] " + c.URI
			if c.Name != "" {
				line += " (" + c.Name + ")"
			}
			if c.Description != "" {
				line += ": " + c.Description
			}
			text = append(text, line)
		case *mcp.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				text = append(text, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				text = append(text, fmt.Sprintf("[resource %s: %s, %s of binary data]", r.URI, r.MIMEType, truncate.FormatSize(int64(len(r.Blob)))))
			}
		case *mcp.AudioContent:
			text = append(text, fmt.Sprintf("[audio %s left out]", c.MIMEType))
		}
	}
	if len(text) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			text = append(text, string(b))
		}
	}
	body := strings.Join(text, "\n")
	if tr := truncate.Head(body, truncate.Limits{}); tr.Truncated {
		body = tr.Content + fmt.Sprintf("\n\n[Showing the first %d lines (%s) of the server's answer; it was cut.]",
			tr.OutputLines, truncate.FormatSize(int64(tr.OutputBytes)))
	}
	if body == "" && len(images) == 0 {
		body = "(no output)"
	}
	out := agent.ToolResult{IsError: res.IsError}
	if body != "" {
		out.Content = append(out.Content, llm.Text(body))
	}
	out.Content = append(out.Content, images...)
	return out
}
