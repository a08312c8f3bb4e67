package main

import (
	"net/http"
	"testing"
)

// Only a comment that starts with the command word asks for a thread.
func TestIssueCommand(t *testing.T) {
	for in, want := range map[string]string{
		"/threadsmith fix the crash":  "fix the crash",
		"  /threadsmith\nfix it\n":    "fix it",
		"/threadsmith":                "",
		"/threadsmithery is great":    "-",
		"please /threadsmith fix it":  "-",
		"> /threadsmith quoted reply": "-",
	} {
		got, ok := issueCommand(in)
		if want == "-" {
			if ok {
				t.Errorf("%q was taken for a command (%q)", in, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("issueCommand(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// A label event counts only when it adds the configured label: GitLab's
// changes say which; another label, or the label removed, is nothing.
func TestIssueEventLabels(t *testing.T) {
	h := http.Header{"X-Gitlab-Event": {"Issue Hook"}}
	gl := func(prev, cur string) string {
		return `{"object_kind":"issue","user":{"id":7,"username":"dev"},"object_attributes":{"iid":12},` +
			`"changes":{"labels":{"previous":[` + prev + `],"current":[` + cur + `]}}}`
	}
	for _, tc := range []struct {
		prev, cur string
		want      bool
	}{
		{``, `{"title":"threadsmith"}`, true},
		{`{"title":"bug"}`, `{"title":"bug"},{"title":"threadsmith"}`, true},
		{`{"title":"threadsmith"}`, `{"title":"threadsmith"},{"title":"bug"}`, false},
		{`{"title":"threadsmith"}`, ``, false},
		{``, `{"title":"bug"}`, false},
	} {
		ev, ok := parseIssueEvent("gitlab", h, []byte(gl(tc.prev, tc.cur)), "threadsmith")
		if ok != tc.want || ok && (ev.number != 12 || ev.author != "7" || !ev.labeled) {
			t.Errorf("gitlab %s -> %s: %+v %v, want %v", tc.prev, tc.cur, ev, ok, tc.want)
		}
	}
	gh := http.Header{"X-GitHub-Event": {"issues"}}
	body := `{"action":"labeled","issue":{"number":3},"label":{"name":"bug"},"sender":{"login":"dev"}}`
	if _, ok := parseIssueEvent("github", gh, []byte(body), "threadsmith"); ok {
		t.Error("github: another label was taken")
	}
	if _, ok := parseIssueEvent("github", gh, []byte(body), ""); ok {
		t.Error("github: a label was taken with no label configured")
	}
	body = `{"action":"unlabeled","issue":{"number":3},"label":{"name":"threadsmith"},"sender":{"login":"dev"}}`
	if _, ok := parseIssueEvent("github", gh, []byte(body), "threadsmith"); ok {
		t.Error("github: a removed label was taken")
	}
}
