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

// Only a new comment counts: an edited one (GitLab's note "update", the
// other forges' "edited") starts nothing, so editing a comment into a
// command later does not open a thread.
func TestIssueEventEditedComments(t *testing.T) {
	gl := http.Header{"X-Gitlab-Event": {"Note Hook"}}
	note := func(action string) string {
		return `{"object_kind":"note","user":{"id":7,"username":"dev"},"issue":{"iid":12},` +
			`"object_attributes":{"id":99,"note":"/threadsmith fix it","noteable_type":"Issue"` + action + `}}`
	}
	if ev, ok := parseIssueEvent("gitlab", gl, []byte(note(`,"action":"create"`)), "threadsmith"); !ok || ev.number != 12 || ev.commentID != 99 {
		t.Errorf("gitlab: a new note was not taken: %+v %v", ev, ok)
	}
	if _, ok := parseIssueEvent("gitlab", gl, []byte(note("")), "threadsmith"); !ok {
		t.Error("gitlab: a note without an action (older GitLab) was not taken")
	}
	if ev, ok := parseIssueEvent("gitlab", gl, []byte(note(`,"action":"update"`)), "threadsmith"); ok {
		t.Errorf("gitlab: an edited note was taken: %+v", ev)
	}
	for kind, h := range map[string]http.Header{"github": {"X-Github-Event": {"issue_comment"}}, "gitea": {"X-Gitea-Event": {"issue_comment"}}} {
		body := `{"action":"edited","issue":{"number":12},"comment":{"id":99,"body":"/threadsmith fix it","user":{"login":"dev"},"author_association":"OWNER"},"sender":{"login":"dev"}}`
		if ev, ok := parseIssueEvent(kind, h, []byte(body), "threadsmith"); ok {
			t.Errorf("%s: an edited comment was taken: %+v", kind, ev)
		}
	}
}
