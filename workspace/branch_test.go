package workspace

import (
	"regexp"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// gitAcceptsBranch asks git itself, so our rules cannot drift from git's.
func gitAcceptsBranch(t *testing.T, name string) bool {
	t.Helper()
	_, err := runGitPlain("", "check-ref-format", "--branch", name)
	return err == nil
}

func TestBranchNameSanitisation(t *testing.T) {
	t.Parallel()
	hashed := regexp.MustCompile(`-[0-9a-f]{8}$`)
	tests := []struct {
		name     string
		key      ThreadKey
		want     string // exact name, or "" to check only the shape
		wantHash bool
	}{
		{"discord snowflake kept verbatim", ThreadKey{"discord", "1234567890123456789"}, "bot/discord-1234567890123456789", false},
		{"slack team/channel/ts keeps the ts", ThreadKey{"slack", "T01ABC/C02DEF/1712345678.123456"}, "", true},
		{"slashes", ThreadKey{"slack", "a/b/c"}, "", true},
		{"dots and ..", ThreadKey{"slack", "a..b"}, "", true},
		{"at-brace", ThreadKey{"slack", "x@{1}"}, "", true},
		{"trailing .lock", ThreadKey{"slack", "thread.lock"}, "", true},
		{"leading dot", ThreadKey{"slack", ".hidden"}, "", true},
		{"unicode", ThreadKey{"slack", "スレッド-ü"}, "", true},
		{"only unicode", ThreadKey{"slack", "スレッド"}, "", true},
		{"control chars", ThreadKey{"slack", "a\x00b\x1fc\x7f"}, "", true},
		{"spaces and glob chars", ThreadKey{"slack", "a b*c?[d]~e^f:g\\h"}, "", true},
		{"upper case", ThreadKey{"slack", "ABC"}, "", true},
		{"long key", ThreadKey{"slack", strings.Repeat("abc", 40)}, "", true},
		{"platform is sanitised", ThreadKey{"Slack/Enterprise", "1"}, "bot/slack-enterprise-1", false},
		{"lower-case simple key", ThreadKey{"slack", "c1-171"}, "bot/slack-c1-171", false},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BranchName("bot/", tt.key)
			if tt.want != "" && got != tt.want {
				t.Errorf("BranchName = %q, want %q", got, tt.want)
			}
			if hashed.MatchString(got) != tt.wantHash {
				t.Errorf("BranchName = %q, hash suffix present = %v, want %v", got, !tt.wantHash, tt.wantHash)
			}
			if !ValidBranchName(got) {
				t.Errorf("ValidBranchName(%q) = false, want true", got)
			}
			if !gitAcceptsBranch(t, got) {
				t.Errorf("git check-ref-format --branch %q failed, want success", got)
			}
			if id := strings.TrimPrefix(got, "bot/"); !regexp.MustCompile(`^[a-z0-9_-]+$`).MatchString(id) {
				t.Errorf("thread id %q has characters outside [a-z0-9_-]", id)
			}
			if len(got) > len("bot/")+len(tt.key.Platform)+1+maxLosslessKey+hashLen+2 {
				t.Errorf("BranchName = %q (%d chars), want a short name", got, len(got))
			}
			if again := BranchName("bot/", tt.key); again != got {
				t.Errorf("BranchName not stable: %q then %q", got, again)
			}
			if prev, dup := seen[got]; dup {
				t.Errorf("BranchName(%v) = %q, same as for %q", tt.key, got, prev)
			}
			seen[got] = tt.name
		})
	}

	t.Run("slack ts is readable", func(t *testing.T) {
		got := BranchName("bot/", ThreadKey{"slack", "T01ABC/C02DEF/1712345678.123456"})
		if !strings.HasPrefix(got, "bot/slack-1712345678-123456-") {
			t.Errorf("BranchName = %q, want it to start with bot/slack-1712345678-123456-", got)
		}
	})
	t.Run("keys that sanitise alike stay distinct", func(t *testing.T) {
		pairs := [][2]string{{"a/b", "a.b"}, {"ABC", "abc"}, {"x y", "x-y"}, {"ü", "ö"}}
		for _, p := range pairs {
			a, b := BranchName("bot/", ThreadKey{"slack", p[0]}), BranchName("bot/", ThreadKey{"slack", p[1]})
			if a == b {
				t.Errorf("keys %q and %q both map to %q, want distinct branches", p[0], p[1], a)
			}
		}
	})
	t.Run("same key on two platforms", func(t *testing.T) {
		a, b := BranchName("bot/", ThreadKey{"slack", "42"}), BranchName("bot/", ThreadKey{"discord", "42"})
		if a == b {
			t.Errorf("slack and discord thread 42 share branch %q", a)
		}
	})
}

func TestValidBranchNameAgreesWithGit(t *testing.T) {
	t.Parallel()
	names := []string{
		"bot/slack-1", "main", "a/b/c", "feature-x_y", "bot/x.y",
		"", "-x", "/x", "x/", "x.", "a..b", "a//b", "x@{1}", "a.lock", "a/b.lock/c", ".a", "a/.b",
		"a b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", "a\\b", "a\x01b", "a\x7fb", "ü/ok",
	}
	// "@" is left out: `check-ref-format --branch` expands it to the current
	// branch instead of judging it; as a ref name git forbids it.
	if ValidBranchName("@") {
		t.Errorf(`ValidBranchName("@") = true, want false`)
	}
	for _, n := range names {
		if got, want := ValidBranchName(n), gitAcceptsBranch(t, n); got != want {
			t.Errorf("ValidBranchName(%q) = %v, git check-ref-format --branch says %v", n, got, want)
		}
	}
}

func TestBranchPrefixValidated(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"bad prefix/", "..x/", "bot/.", "x@{"} {
		_, err := New(Config{DataDir: t.TempDir(), BranchPrefix: prefix, Repos: []Repo{{Name: "app", URL: "/nonexistent"}}, CleanupInterval: -1})
		if err == nil || !strings.Contains(err.Error(), "branch_prefix") {
			t.Errorf("New with branch_prefix %q: err = %v, want an error naming branch_prefix", prefix, err)
		}
	}
}

// runGitPlain runs git hermetically in dir, finding the repository from
// there as a person would.
func runGitPlain(dir string, args ...string) (string, error) {
	return gitremote.TryGit(dir, args...)
}
