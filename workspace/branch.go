package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// ThreadKey names the chat thread a workspace belongs to.
type ThreadKey struct {
	// Platform is "slack", "discord", …; it becomes part of the branch name.
	Platform string
	// Key identifies the thread on that platform (for Slack, team/channel/root
	// ts; for Discord, the thread id). Any string; it is sanitised for refs.
	Key string
}

// String is the key as logs show it.
func (k ThreadKey) String() string { return k.Platform + ":" + k.Key }

const (
	// maxLosslessKey is the longest thread key kept verbatim in a branch name.
	maxLosslessKey = 32
	// keepTail is how much of a sanitised key is kept when a hash is added;
	// the tail of a Slack key is the root message's ts, the part people
	// recognise.
	keepTail = 20
	hashLen  = 8
)

// BranchName returns the branch of the thread: prefix + platform + "-" + a
// short form of the key. The name is a valid git branch name, stable (a pure
// function of its inputs) and unique per thread: when sanitising loses
// information (case, slashes, dots, unicode, …) or the key is long, a short
// hash of the full key is appended, so two keys that sanitise alike still
// get distinct branches.
func BranchName(prefix string, key ThreadKey) string {
	return prefix + threadID(key)
}

// threadID is the branch name without the prefix; it names the workspace's
// folders too, so it only ever contains [a-z0-9_-].
func threadID(key ThreadKey) string {
	platform := sanitize(key.Platform)
	if platform == "" {
		platform = "thread"
	}
	short := sanitize(key.Key)
	if short == key.Key && short != "" && len(short) <= maxLosslessKey {
		return platform + "-" + short
	}
	if len(short) > keepTail {
		short = short[len(short)-keepTail:]
		// Start the tail at a word boundary when that still leaves something
		// meaningful, so "…def-1712345678-123456" reads "1712345678-123456".
		if i := strings.IndexByte(short, '-'); i >= 0 && len(short)-i-1 >= 8 {
			short = short[i+1:]
		}
		short = strings.Trim(short, "-")
	}
	sum := sha256.Sum256([]byte(key.Platform + "\x00" + key.Key))
	h := hex.EncodeToString(sum[:])[:hashLen]
	if short == "" {
		return platform + "-" + h
	}
	return platform + "-" + short + "-" + h
}

// sanitize lowercases s and maps every run of characters outside [a-z0-9_]
// to one '-', trimming '-' at both ends. Lowercase because branches become
// folder names, and macOS and Windows fold case.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

// ValidBranchName reports whether name is acceptable to
// `git check-ref-format --branch`: the rules of refs/heads/<name>.
func ValidBranchName(name string) bool {
	if name == "" || name == "@" || strings.HasPrefix(name, "-") {
		return false
	}
	if strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") {
		return false
	}
	if strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//") {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return false
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return false
		}
	}
	return true
}

// ChatThreadKey is the workspace (and branch) key of a chat thread: the
// thread's own id when it is a channel of its own (a Discord thread), else
// channel and root message (a Slack thread).
func ChatThreadKey(platform, channel, thread string) ThreadKey {
	if channel == thread {
		return ThreadKey{Platform: platform, Key: thread}
	}
	return ThreadKey{Platform: platform, Key: channel + "-" + thread}
}
