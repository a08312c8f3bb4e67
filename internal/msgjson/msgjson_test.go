package msgjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
)

const fixture = "../../agent/compaction/testdata/before-compaction.jsonl"

// fixtureMessages returns the "message" objects of pi's fixture session, raw.
func fixtureMessages(t testing.TB) [][]byte {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e struct {
			Type    string
			Message json.RawMessage
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "message" {
			out = append(out, e.Message)
		}
	}
	if len(out) < 900 {
		t.Fatalf("only %d messages in the fixture", len(out))
	}
	return out
}

// checkMessage compares UnmarshalMessage with encoding/json on data.
func checkMessage(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := UnmarshalMessage(data)
	var want llm.Message
	wantErr := json.Unmarshal(data, &want)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json says %v", data, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got  %#v\n want %#v", data, got, want)
	}
}

// refPiMessage is compaction's reading of a pi message with encoding/json.
type refPiMessage struct {
	Role           string          `json:"role"`
	Content        json.RawMessage `json:"content"`
	Timestamp      json.RawMessage `json:"timestamp"`
	Provider       string          `json:"provider"`
	Model          string          `json:"model"`
	Usage          *llm.Usage      `json:"usage"`
	StopReason     string          `json:"stopReason"`
	ErrorMessage   string          `json:"errorMessage"`
	ToolCallID     string          `json:"toolCallId"`
	ToolName       string          `json:"toolName"`
	IsError        bool            `json:"isError"`
	Details        json.RawMessage `json:"details"`
	CustomType     string          `json:"customType"`
	Display        bool            `json:"display"`
	Summary        string          `json:"summary"`
	TokensBefore   int             `json:"tokensBefore"`
	Command        string          `json:"command"`
	Output         string          `json:"output"`
	ExitCode       *int            `json:"exitCode"`
	Cancelled      bool            `json:"cancelled"`
	Truncated      bool            `json:"truncated"`
	FullOutputPath string          `json:"fullOutputPath"`
}

// refPi decodes a pi message the slow way; ok is false where compaction
// would count the message as malformed.
func refPi(data []byte) (PiMessage, bool) {
	var pm refPiMessage
	if err := json.Unmarshal(data, &pm); err != nil {
		return PiMessage{}, false
	}
	var content []llm.Content
	raw := bytes.TrimSpace(pm.Content)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return PiMessage{}, false
		}
		content = []llm.Content{llm.Text(s)}
	default:
		if json.Unmarshal(raw, &content) != nil {
			return PiMessage{}, false
		}
	}
	return PiMessage{
		Message: llm.Message{
			Role: llm.Role(pm.Role), Content: content, Provider: pm.Provider, Model: pm.Model, Usage: pm.Usage,
			StopReason: llm.StopReason(pm.StopReason), ErrorMessage: pm.ErrorMessage, ToolCallID: pm.ToolCallID,
			ToolName: pm.ToolName, IsError: pm.IsError, Details: pm.Details, CustomType: pm.CustomType,
			Display: pm.Display, Summary: pm.Summary, TokensBefore: pm.TokensBefore,
		},
		Timestamp: pm.Timestamp, Command: pm.Command, Output: pm.Output, ExitCode: pm.ExitCode,
		Cancelled: pm.Cancelled, Truncated: pm.Truncated, FullOutputPath: pm.FullOutputPath,
	}, true
}

func checkPi(t *testing.T, data []byte) {
	t.Helper()
	got, ok := DecodePiMessage(data)
	if !ok {
		return // the caller takes the slow path
	}
	want, wantOK := refPi(data)
	if !wantOK {
		t.Fatalf("%q: decoded, but encoding/json refuses it", data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got  %#v\n want %#v", data, got, want)
	}
}

func TestFixtureMessagesMatchEncodingJSON(t *testing.T) {
	fast := 0
	for _, raw := range fixtureMessages(t) {
		checkPi(t, raw)
		if _, ok := DecodePiMessage(raw); ok {
			fast++
		}
		// The storage form of the same message, as storage writes it.
		m, ok := refPi(raw)
		if !ok {
			t.Fatalf("fixture message does not decode: %q", raw)
		}
		stored, err := json.Marshal(m.Message)
		if err != nil {
			t.Fatal(err)
		}
		checkMessage(t, stored)
		checkMessage(t, raw) // pi's form read as a stored message: content strings fail over
	}
	if fast < 980 {
		t.Errorf("the fast path decoded %d fixture messages, want nearly all", fast)
	}
}

// edgeCases are inputs where a one-pass decoder could part from
// encoding/json.
var edgeCases = []string{
	`{"role":"user","content":[{"type":"text","text":"a\"b\\c\/d\b\f\n\r\t\u00e9\u003c\ud83d\ude00"}]}`,
	`{"role":"user","content":[{"type":"text","text":"lone \ud83d surrogate"}]}`,
	`{"role":"user","content":[{"type":"text","text":"bad \x"}]}`,
	`{"role":"user","content":[{"type":"text","text":"ctl ` + "\x01" + `"}]}`,
	`{"role":"user","content":[{"type":"text","text":"invalid ` + "\xff\xfe" + ` utf8"}]}`,
	`{"role":"user","role":"assistant"}`,
	`{"Role":"user"}`,
	`{"ROLE":"user","content":null}`,
	`{"role":null,"content":null,"usage":null,"details":null,"timestamp":null}`,
	`{"role":"assistant","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"total":0.1}}}`,
	`{"role":"assistant","usage":{"input":1.5}}`,
	`{"role":"assistant","usage":{"input":1e3}}`,
	`{"role":"assistant","usage":{"input":-0}}`,
	`{"role":"assistant","usage":{"input":01}}`,
	`{"role":"assistant","usage":{"input":99999999999999999999}}`,
	`{"role":"assistant","timestamp":-9223372036854775808}`,
	`{"role":"assistant","timestamp":9223372036854775808}`,
	`{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.go","n":[1,2.5e-3,true,null,{"x":"y"}]}}]}`,
	`{"role":"assistant","content":[{"type":"toolCall","arguments":null}]}`,
	`{"role":"assistant","content":[null]}`,
	`{"role":"assistant","content":[]}`,
	`{"role":"assistant","content":[{}]}`,
	`{"role":"assistant","content":[1]}`,
	`{"role":"assistant","content":"text"}`,
	`{"role":"toolResult","isError":true,"details":{"diff":"x"},"display":false}`,
	`{"role":"toolResult","isError":"yes"}`,
	`{"role":"assistant","errorInfo":{"kind":"http","status":429,"code":"rate_limit","message":"slow"},"stopReason":"error"}`,
	`{"role":"bashExecution","bash":{"command":"ls","output":"a\n","exitCode":0}}`,
	`{"role":"bashExecution","command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/x"}`,
	`{"role":"user","timestamp":"2025-01-01T00:00:00Z"}`,
	`{"role":"user","timestamp":1750000000000.5}`,
	` {"role" : "user" , "content" : [ { "type" : "text" , "text" : "sp" } ] } `,
	`{"role":"user",}`,
	`{"role":"user"} x`,
	`{"role":"user"`,
	`{"role":"user","content":[{"type":"text","text":"a"},]}`,
	`{"ro\u006ce":"user"}`,
	`{"rôle":"user"}`,
	`{"unknown":{"deep":[[[[{"a":null}]]]]},"role":"user"}`,
	`{"role":"user","inputId":"42","customType":"ctx","summary":"s","tokensBefore":12}`,
	`null`,
	`[]`,
	`{}`,
	``,
}

func TestEdgeCasesMatchEncodingJSON(t *testing.T) {
	for _, c := range edgeCases {
		checkMessage(t, []byte(c))
		checkPi(t, []byte(c))
	}
}

func FuzzMessage(f *testing.F) {
	for _, c := range edgeCases {
		f.Add([]byte(c))
	}
	for i, raw := range fixtureMessages(f) {
		if i%50 == 0 {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkMessage(t, data)
		checkPi(t, data)
	})
}

func TestPiMessageLine(t *testing.T) {
	good := `{"type":"message","id":"a1","parentId":null,"timestamp":"2025-06-01T10:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}`
	l, ok := DecodePiMessageLine([]byte(good))
	if !ok || l.ID != "a1" || l.ParentID != nil || string(l.Timestamp) != `"2025-06-01T10:00:00.000Z"` ||
		l.Message.Role != llm.RoleUser || len(l.Message.Content) != 1 || l.Message.Content[0].Text != "hi" || string(l.Message.Timestamp) != "1" {
		t.Errorf("DecodePiMessageLine(%s) = %+v, %v", good, l, ok)
	}
	for _, line := range []string{
		`{"type":"model_change","provider":"x","modelId":"y"}`,
		`{"type":"message","message":{"role":"user"},"extra":1}`,
		`{"type":"message","type":"message","message":{"role":"user"}}`,
		`{"type":"message"}`,
		`{"type":"message","message":{"role":"user"}} trailing`,
		`{"type":"message","message":{"role":"user","content":[null]}}`,
		strings.Replace(good, `"a1"`, `"a\u0031"`, 1) + "x",
	} {
		if l, ok := DecodePiMessageLine([]byte(line)); ok {
			t.Errorf("DecodePiMessageLine(%s) = %+v, want it left to the slow path", line, l)
		}
	}
	parent := `{"type":"message","id":"b","parentId":"a","message":{"role":"user"}}`
	if l, ok := DecodePiMessageLine([]byte(parent)); !ok || l.ParentID == nil || *l.ParentID != "a" {
		t.Errorf("parentId: %+v, %v", l, ok)
	}
}

// TestFastPathHandlesEveryField fails when a field is added to llm.Message,
// llm.Content, llm.Usage or llm.Cost without a case in the fast path:
// messages with it would still decode right (through encoding/json), only
// slowly.
func TestFastPathHandlesEveryField(t *testing.T) {
	for _, set := range []struct {
		keys []string
		obj  func(key string) string
	}{
		{messageKeys, func(k string) string { return `{"` + k + `":` + sample(k) + `}` }},
		{contentKeys, func(k string) string { return `{"content":[{"` + k + `":` + sample(k) + `}]}` }},
		{usageKeys, func(k string) string { return `{"usage":{"` + k + `":` + sample(k) + `}}` }},
		{costKeys, func(k string) string { return `{"usage":{"cost":{"` + k + `":` + sample(k) + `}}}` }},
	} {
		for _, k := range set.keys {
			data := set.obj(k)
			r := reader{data: []byte(data)}
			var m llm.Message
			if !decodeMessage(&r, &m, nil) {
				t.Errorf("the fast path does not handle %s", data)
			}
			checkMessage(t, []byte(data))
		}
	}
}

// sample is a value of the type of the field named k.
func sample(k string) string {
	switch k {
	case "content":
		return `[]`
	case "usage", "cost", "errorInfo", "bash", "details", "arguments":
		return `{}`
	case "timestamp", "tokensBefore", "input", "output", "cacheRead", "cacheWrite", "totalTokens", "total":
		return `1`
	case "isError", "display":
		return `true`
	}
	return `"x"`
}

// Escapes inside values the fast path skips (unknown keys, raw values) are
// checked too: encoding/json refuses the whole input.
func TestBadEscapesInSkippedValues(t *testing.T) {
	for _, c := range []string{
		`{"role":"user","x":"\u12"}`,
		`{"role":"user","details":{"a":"\q"}}`,
		`{"role":"user","content":[{"type":"toolCall","arguments":{"a":"\u00zz"}}]}`,
		`{"role":"user","details":"\ud800"}`,
	} {
		checkMessage(t, []byte(c))
		checkPi(t, []byte(c))
	}
}
