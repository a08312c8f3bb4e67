package bridge

import "github.com/threadsmith/threadsmith/chat/mdsplit"

// Split cuts Markdown text into messages of at most limit characters as
// the platform receives them (measure; nil counts runes), code blocks closed
// and reopened across messages: see mdsplit.Chunks.
func Split(text string, limit int, measure func(string) int) []string {
	return mdsplit.Chunks(text, limit, measure)
}
