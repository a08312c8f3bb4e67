package compaction

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// jsStringify, the tests' oracle for jsLen, returns JSON.stringify(JSON.parse(raw))
// as UTF-8 text. A lone surrogate is written as its six-character escape, exactly as
// JavaScript writes it, so the UTF-16 length of the result is the JavaScript length.
func jsStringify(raw []byte) (string, error) {
	p := jsParser{src: raw}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return "", err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return "", errBadJSON
	}
	var b strings.Builder
	b.Grow(len(raw))
	v.write(&b)
	return b.String(), nil
}

// The wanted values were produced by Node.js: JSON.stringify(JSON.parse(in)).

func TestJSStringify(t *testing.T) {
	tests := []struct {
		name, in, want string
		units          int // JavaScript .length of want
	}{
		{"whitespace removed", `{ "b" : 1 , "a" : [ 1 , 2 ] }`, `{"b":1,"a":[1,2]}`, 17},
		{"array-index keys first, ascending",
			`{"b":1,"2":"x","a":2,"1":"y","01":"z","4294967294":0,"4294967295":1}`,
			`{"1":"y","2":"x","4294967294":0,"b":1,"a":2,"01":"z","4294967295":1}`, 68},
		{"repeated key: first place, last value", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`, 13},
		{"html and line separators not escaped", `"\u003cdiv\u003e \u0026 \/ \u2028\u2029"`, "\"<div> & / \u2028\u2029\"", 14},
		{"control characters", `"\u0008\u000c\n\r\t\u0000\u001f\u007f"`, "\"\\b\\f\\n\\r\\t\\u0000\\u001f\x7f\"", 25},
		{"surrogates: lone ones stay escaped, pairs become characters",
			`"\ud800 \udc00x \ud83d\ude00 \ud83d"`, "\"\\ud800 \\udc00x \U0001F600 \\ud83d\"", 26},
		{"quote and backslash", `"\"\\"`, `"\"\\"`, 6},
		{"non-ASCII as is", `"é中😀"`, `"é中😀"`, 6},
		{"numbers as JavaScript prints them",
			`[1.0, 1e21, 1e-7, 0.000001, -0, 1E400, -1e400, 123456789012345678901, 1.5e300, 1e2, 2.50, 0.1, 123e-20, 5e-324, 1.7976931348623157e308, -0.0, 1234567890123456, 100000000000000000000, 0.0000012345]`,
			`[1,1e+21,1e-7,0.000001,0,null,null,123456789012345680000,1.5e+300,100,2.5,0.1,1.23e-18,5e-324,1.7976931348623157e+308,0,1234567890123456,100000000000000000000,0.0000012345]`, 172},
		{"nesting and literals", `{"x":{"y":[true,false,null,{}]},"z":[]}`, `{"x":{"y":[true,false,null,{}]},"z":[]}`, 39},
		{"escaped key", `{"\u0070ath":"a"}`, `{"path":"a"}`, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsStringify([]byte(tt.in))
			if err != nil {
				t.Fatalf("jsStringify(%s) error: %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("jsStringify(%s)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if n := llm.UTF16Len(got); n != tt.units {
				t.Errorf("JavaScript length of %q: got %d, want %d", got, n, tt.units)
			}
			if n, err := jsLen([]byte(tt.in)); err != nil || n != tt.units {
				t.Errorf("jsLen(%s) = %d, %v; want %d", tt.in, n, err, tt.units)
			}
		})
	}
}

func TestJSStringifyRejectsInvalidJSON(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a":}`, `{"a" 1}`, `[1,]`, `"abc`, `tru`, `01`, `1.`, `{"a":1} x`, "\"a\x01\"", `"\x"`, `"\u12"`} {
		if got, err := jsStringify([]byte(in)); err == nil {
			t.Errorf("jsStringify(%q) = %q, want an error", in, got)
		}
		if n, err := jsLen([]byte(in)); err == nil {
			t.Errorf("jsLen(%q) = %d, want an error", in, n)
		}
	}
}

func TestJSNumber(t *testing.T) {
	tests := map[float64]string{
		1: "1", -1.5: "-1.5", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-6: "0.000001",
		1e-7: "1e-7", 1.5e-7: "1.5e-7", 123.456: "123.456", -2e-10: "-2e-10",
	}
	for f, want := range tests {
		if got := jsNumber(f); got != want {
			t.Errorf("jsNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

// TestJSLenLongRuns puts each kind of special text at every position of a
// string spanning two of jsonscan's 64-byte blocks.
func TestJSLenLongRuns(t *testing.T) {
	for _, special := range []string{`\"`, `\\`, `\n`, `\/`, `\u0001`, `\u003c`, `\\\"`, "é", "😀", "\x7f", "\xff", `\ud800`, `\ud83d\ude00`} {
		for pos := 0; pos <= 140; pos++ {
			raw := `"` + strings.Repeat("a", pos) + special + strings.Repeat("b", 140-pos) + `"`
			out, err := jsStringify([]byte(raw))
			if err != nil {
				t.Fatalf("jsStringify(%q): %v", raw, err)
			}
			if n, err := jsLen([]byte(raw)); err != nil || n != llm.UTF16Len(out) {
				t.Errorf("jsLen(%q) = %d, %v; want %d", raw, n, err, llm.UTF16Len(out))
			}
		}
	}
}

// FuzzJSLen checks that the length-only scanner always agrees with the serializer.
func FuzzJSLen(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"b":[true,null,"x"]}`, `{"a":1,"\u0061":2}`, `{"é":1,"\u00e9":2,"e\u0301":3}`,
		`"\ud83d\ude00\ud800\u0000\/"`, `[1e400,-0,0.1,1e21,123456789012345678]`, `{"2":1,"1":2}`, "\"a\xffb\"",
		`{"content":"héllo wörld ✓ ✓ ✓ 😀😀😀 and \"quoted\" text\nover lines, long enough for whole words"}`,
		"\"" + strings.Repeat("ü", 30) + "\xff" + strings.Repeat("😀", 5) + "\"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := jsStringify(raw)
		n, lerr := jsLen(raw)
		if (err == nil) != (lerr == nil) {
			t.Fatalf("%q: jsStringify error %v, jsLen error %v", raw, err, lerr)
		}
		if err == nil && n != llm.UTF16Len(out) {
			t.Fatalf("%q: jsLen %d, length of %q is %d", raw, n, out, llm.UTF16Len(out))
		}
	})
}
