package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
)

// wrapper forwards Spec and ReadOnly, so a decorated tool still runs in
// parallel with other read-only tools.
type wrapper struct{ inner agent.Tool }

func (w wrapper) Spec() llm.ToolSpec { return w.inner.Spec() }

func (w wrapper) ReadOnly() bool {
	ro, ok := w.inner.(agent.ReadOnlyTool)
	return ok && ro.ReadOnly()
}

// guarded turns a panic of a tool into an infrastructure error, so one bad
// call cannot take the bot (and every other session) down.
type guarded struct{ wrapper }

func (g guarded) Execute(ctx context.Context, call agent.ToolCall, update func(agent.ToolResult)) (res agent.ToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %s panicked: %v\n%s", call.Name, p, debug.Stack())
		}
	}()
	return g.inner.Execute(ctx, call, update)
}

// redacting replaces configured secrets in everything a tool returns.
type redacting struct {
	wrapper
	r *redactor
}

func (d redacting) Execute(ctx context.Context, call agent.ToolCall, update func(agent.ToolResult)) (agent.ToolResult, error) {
	var up func(agent.ToolResult)
	if update != nil {
		up = func(r agent.ToolResult) { update(d.r.result(r)) }
	}
	res, err := d.inner.Execute(ctx, call, up)
	if err != nil {
		err = errors.New(d.r.text(err.Error()))
	}
	return d.r.result(res), err
}

// Redacted is what a secret is replaced by.
const Redacted = "[redacted]"

type redactor struct {
	plain *strings.Replacer // for text
	json  *strings.Replacer // for JSON details, where a secret may appear escaped
}

func newRedactor(secrets []string) *redactor {
	var list []string
	for _, s := range secrets {
		if s != "" && !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return nil
	}
	// Longer first: the replacer prefers earlier pairs, and a secret that
	// contains another must be replaced whole.
	slices.SortFunc(list, func(a, b string) int { return len(b) - len(a) })
	var plain, js []string
	for _, s := range list {
		plain = append(plain, s, Redacted)
		js = append(js, s, Redacted)
		if b, err := json.Marshal(s); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != s {
				js = append(js, esc, Redacted)
			}
		}
	}
	return &redactor{plain: strings.NewReplacer(plain...), json: strings.NewReplacer(js...)}
}

func (r *redactor) text(s string) string { return r.plain.Replace(s) }

func (r *redactor) result(res agent.ToolResult) agent.ToolResult {
	if len(res.Content) > 0 {
		content := make([]llm.Content, len(res.Content))
		for i, c := range res.Content {
			c.Text = r.plain.Replace(c.Text)
			c.Thinking = r.plain.Replace(c.Thinking)
			content[i] = c
		}
		res.Content = content
	}
	if len(res.Details) > 0 {
		res.Details = json.RawMessage(r.json.Replace(string(res.Details)))
	}
	return res
}

// timed logs every call with its duration; infrastructure errors are logged
// with their detail, which the model sees only as a short message.
type timed struct {
	wrapper
	log *slog.Logger
}

func (d timed) Execute(ctx context.Context, call agent.ToolCall, update func(agent.ToolResult)) (agent.ToolResult, error) {
	start := time.Now()
	res, err := d.inner.Execute(ctx, call, update)
	took := time.Since(start)
	if err != nil {
		d.log.LogAttrs(ctx, slog.LevelError, "tool failed", slog.String("tool", call.Name),
			slog.String("call", call.ID), slog.Duration("took", took), slog.String("err", err.Error()))
		return res, err
	}
	d.log.LogAttrs(ctx, slog.LevelDebug, "tool call", slog.String("tool", call.Name),
		slog.String("call", call.ID), slog.Duration("took", took), slog.Bool("error", res.IsError))
	return res, nil
}

// capped bounds the text of a result, whatever the tool did.
type capped struct {
	wrapper
	max int
}

func (d capped) Execute(ctx context.Context, call agent.ToolCall, update func(agent.ToolResult)) (agent.ToolResult, error) {
	var up func(agent.ToolResult)
	if update != nil {
		up = func(r agent.ToolResult) { update(capResult(r, d.max)) }
	}
	res, err := d.inner.Execute(ctx, call, up)
	return capResult(res, d.max), err
}

func capResult(res agent.ToolResult, limit int) agent.ToolResult {
	total := 0
	for _, c := range res.Content {
		total += len(c.Text)
	}
	if total <= limit {
		return res
	}
	content := make([]llm.Content, 0, len(res.Content))
	budget := limit
	for _, c := range res.Content {
		if c.Type == llm.ContentText {
			if budget <= 0 {
				continue
			}
			if len(c.Text) > budget {
				cut := budget
				for cut > 0 && !utf8.RuneStart(c.Text[cut]) {
					cut--
				}
				c.Text = c.Text[:cut] + fmt.Sprintf("\n\n[Result cut at %s.]", truncate.FormatSize(int64(limit)))
			}
			budget -= len(c.Text)
		}
		content = append(content, c)
	}
	res.Content = content
	return res
}

// Redactor returns a function that replaces every secret in a text, as the
// decorators do in results (for text shown elsewhere, such as a tool call's
// arguments); with no secrets, it returns the text as it is.
func Redactor(secrets []string) func(string) string {
	if r := newRedactor(secrets); r != nil {
		return r.text
	}
	return func(s string) string { return s }
}

// RedactString replaces every secret in s, as the decorators do in results
// (for text that goes to the logs instead, such as a helper's stderr).
func RedactString(s string, secrets []string) string {
	if r := newRedactor(secrets); r != nil {
		return r.text(s)
	}
	return s
}
