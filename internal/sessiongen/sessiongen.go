// Package sessiongen makes realistic sessions for tests and benchmarks: the
// entries of a long coding session (prompts, replies with thinking and tool
// calls, a few KB of tool output each, compactions as the defaults trigger
// them, a model change), deterministic per seed, and the same session as a pi
// session file, so that pi's own code can be timed on exactly what
// threadsmith's is (BENCHMARKS.md says how pi is run beside it).
package sessiongen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

// codeLines are the raw material of realistic tool output: source, quotes,
// tabs and newlines that JSON must escape.
var codeLines = []string{
	"func (s *Server) handle(w http.ResponseWriter, r *http.Request) {",
	"\tif err := json.NewDecoder(r.Body).Decode(&req); err != nil {",
	"\t\thttp.Error(w, \"bad request: \"+err.Error(), http.StatusBadRequest)",
	"\t\treturn",
	"\t}",
	"// Process handles one request and returns its result.",
	"\tfor i, item := range items {",
	"\t\tresult = append(result, fmt.Sprintf(\"%d: %s\", i, item.Name))",
	"import { useState } from 'react';",
	"  const [value, setValue] = useState<string>(\"\");",
	"=== RUN   TestHandle/empty_body",
	"--- PASS: TestHandle (0.00s)",
	"ok  \tgithub.com/acme/app/server\t0.412s",
	"src/server/handler.go:42:17: undefined: reqBody",
}

// proseLines are non-ASCII material: comments and messages in CJK, accented
// Latin, Cyrillic and emoji (astral code points, two UTF-16 units each).
var proseLines = []string{
	"// 处理一个请求并返回结果。错误时返回 400。",
	"\t// ファイルを読み込んで、内容を検証します。",
	"\tlog.Printf(\"요청 처리 실패: %v\", err) // 🚨 재시도 필요",
	"Die Änderung prüft, ob «café» und „Straße“ richtig sortiert werden.",
	"Ошибка: файл не найден — проверьте путь ✅",
	"✨ 测试通过 🎉 (0.41s) — 全部 12 个用例",
	"\"naïve résumé\": l’élève a déjà reçu ½ des points 👍",
	"src/服务/处理器.go:42:17: 未定义: reqBody",
}

// Compaction as the defaults trigger it: above a 128k-token window minus the
// 16k reserve, keeping about 20k tokens (at 4 characters a token).
const (
	compactAtChars = (128_000 - 16_384) * 4
	keepChars      = 20_000 * 4
)

// Entries returns n entries shaped like a real session: a user prompt, then
// turns of an assistant reply with thinking and a tool call followed by the
// tool's result (a few KB of code or command output), an answer now and then, a
// compaction whenever the live context would pass the window (every ~200
// entries) and a model change at seq 1500. Deterministic per seed; a shorter
// session is a prefix of a longer one.
func Entries(seed uint64, n int) []transcript.Entry {
	return Generate(seed, Shape{Entries: n})
}

// Shape varies a generated session. The zero values give Entries' session:
// tool results of 1–6 KB of code, a compaction whenever the live context
// passes the default window.
type Shape struct {
	// Entries is the number of entries; when Bytes is set, entries are added
	// until their messages hold that many bytes of text instead.
	Entries int
	Bytes   int
	// NonASCII draws every other line of text from CJK, accented, Cyrillic and
	// emoji prose instead of code.
	NonASCII bool
	// ResultMin and ResultMax size tool results in bytes (1,000–6,000 by
	// default); HugeEvery, when set, makes every HugeEvery-th result
	// HugeMin–HugeMax bytes instead.
	ResultMin, ResultMax int
	HugeEvery            int
	HugeMin, HugeMax     int
	// AnswerEvery makes one assistant reply in AnswerEvery a text answer
	// instead of a tool call (4 by default).
	AnswerEvery int
	// CompactAt is the live context, in characters, above which a compaction
	// is appended (the default window's); Keep what a compaction keeps.
	CompactAt, Keep int
}

// Generate returns a session of the given shape, deterministic per seed.
func Generate(seed uint64, sh Shape) []transcript.Entry {
	if sh.ResultMin == 0 {
		sh.ResultMin, sh.ResultMax = 1000, 6000
	}
	if sh.AnswerEvery == 0 {
		sh.AnswerEvery = 4
	}
	if sh.CompactAt == 0 {
		sh.CompactAt = compactAtChars
	}
	if sh.Keep == 0 {
		sh.Keep = keepChars
	}
	compactAtChars, keepChars := sh.CompactAt, sh.Keep
	r := rand.New(rand.NewPCG(seed, 42))
	n := sh.Entries
	if sh.Bytes > 0 {
		n = math.MaxInt
	}
	out := make([]transcript.Entry, 0, min(n, 1<<16))
	ts := int64(1_750_000_000_000)
	text := func(minLen, maxLen int) string {
		target := minLen + r.IntN(maxLen-minLen+1)
		var b strings.Builder
		b.Grow(target + 100)
		for i := 0; b.Len() < target; i++ {
			if sh.NonASCII && i%2 == 0 {
				b.WriteString(proseLines[r.IntN(len(proseLines))])
			} else {
				b.WriteString(codeLines[r.IntN(len(codeLines))])
			}
			b.WriteByte('\n')
		}
		return b.String()
	}
	results, total := 0, 0
	pendingCall := ""
	size := func(e transcript.Entry) int {
		if e.Message == nil {
			return 0
		}
		n := 0
		for _, c := range e.Message.Content {
			n += len(c.Text) + len(c.Thinking) + len(c.Arguments)
		}
		return n
	}
	live := 0 // characters of the messages in the live context
	for seq := int64(0); int(seq) < n && (sh.Bytes == 0 || total < sh.Bytes); seq++ {
		ts += int64(r.IntN(5000))
		var e transcript.Entry
		switch {
		case live > compactAtChars && pendingCall == "" && out[len(out)-1].Type != transcript.EntryCompaction:
			// (A kept huge output can leave the context over the window:
			// the next compaction waits for the next entry.)
			// Keep the recent messages, cutting before a user or
			// assistant message, never before a tool result.
			keep, kept := seq, 0
			for kept < keepChars || out[keep].Message == nil || out[keep].Message.Role == llm.RoleToolResult {
				keep--
				kept += size(out[keep])
			}
			e = transcript.Entry{Seq: seq, Type: transcript.EntryCompaction, Timestamp: ts, Compaction: &transcript.Compaction{
				Summary:       "## Goal\n" + text(800, 1500),
				FirstKeptSeq:  keep,
				TokensBefore:  live / 4,
				ReadFiles:     []string{"server/handler.go", "server/handler_test.go"},
				ModifiedFiles: []string{"server/handler.go"},
				Reason:        "threshold",
			}}
			live = kept
		case seq == 1500:
			e = transcript.Entry{Seq: seq, Type: transcript.EntryModelChange, Timestamp: ts,
				ModelChange: &transcript.ModelChange{Provider: "openai", Model: "gpt-4.1-mini"}}
		case pendingCall != "":
			results++
			lo, hi := sh.ResultMin, sh.ResultMax
			if sh.HugeEvery > 0 && results%sh.HugeEvery == 0 {
				lo, hi = sh.HugeMin, sh.HugeMax
			}
			m := llm.Message{Role: llm.RoleToolResult, Timestamp: ts, ToolCallID: pendingCall, ToolName: "read",
				Content: []llm.Content{llm.Text(text(lo, hi))}, IsError: r.IntN(10) == 0}
			e = transcript.MessageEntry(seq, m)
			pendingCall = ""
		case seq%12 == 0:
			m := llm.UserText("please " + text(60, 400))
			// Not a decimal number: storage delivers the inbound row a
			// user message's InputID names, and a generated session must not
			// deliver the real input of a test that stores both.
			m.Timestamp, m.InputID = ts, fmt.Sprint("gen-", seq)
			e = transcript.MessageEntry(seq, m)
		default:
			m := llm.Message{Role: llm.RoleAssistant, Timestamp: ts, Provider: "openai", Model: "gpt-4.1",
				Usage: &llm.Usage{Input: 20_000 + r.IntN(80_000), Output: 50 + r.IntN(800), CacheRead: r.IntN(20_000)}}
			m.Content = append(m.Content, llm.Content{Type: llm.ContentThinking, Thinking: text(50, 300)})
			if r.IntN(sh.AnswerEvery) == 0 {
				m.Content = append(m.Content, llm.Text(text(200, 1200)))
				m.StopReason = llm.StopReasonStop
			} else {
				pendingCall = fmt.Sprintf("call_%d_%x", seq, r.Uint32())
				args, _ := json.Marshal(map[string]any{"path": "server/handler.go", "offset": r.IntN(400), "limit": 200})
				m.Content = append(m.Content, llm.ToolCall(pendingCall, "read", args))
				m.StopReason = llm.StopReasonToolUse
			}
			e = transcript.MessageEntry(seq, m)
		}
		out = append(out, e)
		live += size(e)
		total += size(e)
	}
	return out
}

// WritePi writes entries as a pi session file (format version 3): a header,
// then one line per entry, each the child of the one before (ids "e<seq>").
// Messages are written in llm.Message's JSON, which is pi's; compactions name
// their first kept entry by id and carry their file lists in details.
func WritePi(w io.Writer, entries []transcript.Entry) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false) // as JSON.stringify writes
	iso := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
	ts := int64(1_750_000_000_000)
	if len(entries) > 0 {
		ts = entries[0].Timestamp
	}
	if err := enc.Encode(map[string]any{"type": "session", "version": 3, "id": "generated", "timestamp": iso(ts), "cwd": "/work/app"}); err != nil {
		return err
	}
	var parent *string
	for _, e := range entries {
		id := fmt.Sprintf("e%d", e.Seq)
		line := map[string]any{"type": string(e.Type), "id": id, "parentId": parent, "timestamp": iso(e.Timestamp)}
		switch e.Type {
		case transcript.EntryMessage:
			line["message"] = e.Message
		case transcript.EntryCompaction:
			c := e.Compaction
			line["summary"] = c.Summary
			line["firstKeptEntryId"] = fmt.Sprintf("e%d", c.FirstKeptSeq)
			line["tokensBefore"] = c.TokensBefore
			line["details"] = map[string]any{"readFiles": c.ReadFiles, "modifiedFiles": c.ModifiedFiles}
		case transcript.EntryModelChange:
			line["provider"] = e.ModelChange.Provider
			line["modelId"] = e.ModelChange.Model
		case transcript.EntryThinkingLevel:
			line["thinkingLevel"] = e.ThinkingLevel
		default:
			return fmt.Errorf("sessiongen: entry %d: type %s has no pi form here", e.Seq, e.Type)
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
		parent = &id
	}
	return bw.Flush()
}
