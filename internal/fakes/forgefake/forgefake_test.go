package forgefake_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
)

// A title or description longer than the forge takes is refused with its
// validation error, on opening a request and on updating it; one at the
// limit is taken.
func TestTitleAndBodyLimits(t *testing.T) {
	for _, tc := range []struct {
		kind, titleKey, bodyKey, auth string
		title, body                   int // the limits; body 0: none
		refused                       int // the status of a refusal
	}{
		{"github", "title", "body", "Bearer ", 256, 65536, http.StatusUnprocessableEntity},
		{"gitlab", "title", "description", "Bearer ", 255, 1 << 20, http.StatusBadRequest},
		{"gitea", "title", "body", "token ", 255, 0, http.StatusUnprocessableEntity},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			fake := forgefake.New(t, tc.kind, "acme/app", "tok")
			pulls := fake.APIURL() + "/repos/acme/app/pulls"
			method := "PATCH"
			if tc.kind == "gitlab" {
				pulls = fake.APIURL() + "/projects/" + url.PathEscape("acme/app") + "/merge_requests"
				method = "PUT"
			}
			do := func(method, u string, fields map[string]any) int {
				t.Helper()
				b, _ := json.Marshal(fields)
				req, _ := http.NewRequest(method, u, bytes.NewReader(b))
				req.Header.Set("Authorization", tc.auth+"tok")
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			open := func(head string, title, body int) int {
				return do("POST", pulls, map[string]any{
					"head": head, "base": "main", "source_branch": head, "target_branch": "main",
					"title": strings.Repeat("t", title), tc.bodyKey: strings.Repeat("b", body),
				})
			}
			if got := open("long-title", tc.title+1, 1); got != tc.refused {
				t.Errorf("a title of %d: %d, want %d", tc.title+1, got, tc.refused)
			}
			if tc.body > 0 {
				if got := open("long-body", 1, tc.body+1); got != tc.refused {
					t.Errorf("a description of %d: %d, want %d", tc.body+1, got, tc.refused)
				}
			}
			if got := open("at-limit", tc.title, tc.body); got != http.StatusCreated {
				t.Fatalf("a title and description at the limits: %d, want 201", got)
			}
			if got := do(method, pulls+"/1", map[string]any{tc.titleKey: strings.Repeat("t", tc.title+1)}); got != tc.refused {
				t.Errorf("an update with a title of %d: %d, want %d", tc.title+1, got, tc.refused)
			}
			if prs := fake.PRs(); len(prs) != 1 || prs[0].Updates != 0 {
				t.Errorf("requests %+v, want the one at the limits, not updated", prs)
			}
		})
	}
}
