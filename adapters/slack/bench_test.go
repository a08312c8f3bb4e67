package slack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/chat/mdsplit"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// BenchmarkMentionBurstAck measures the acknowledgement latency of a burst of
// 200 mentions in 200 threads (400 envelopes: app_mention and message each),
// from the fake writing an envelope to reading its ack:
//
//   - floor: a bare slack-go Socket Mode client that acks every envelope as it
//     arrives (the fake's own BenchmarkMentionBurstAck), the cost of the
//     transport alone;
//   - adapter: this adapter, acking each envelope after a de-duplicating
//     in-memory Receive.
//
// The target is p99 < 50 ms; compare with the floor of the same run.
func BenchmarkMentionBurstAck(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		srv := slackfake.New(b, slackfake.WithoutBotEcho())
		slackfake.StartAckingClient(b, srv)
		burst(b, srv)
	})
	b.Run("adapter", func(b *testing.B) {
		srv := slackfake.New(b, slackfake.WithoutBotEcho())
		startSocket(b, srv, &dedupHandler{seen: map[string]bool{}})
		burst(b, srv)
	})
}

// burst raises b.N bursts of 200 mentions in 200 threads, waits for every ack,
// and reports the latency percentiles.
func burst(b *testing.B, srv *slackfake.Server) {
	ctx := testContext(b)
	if err := srv.WaitConnections(ctx, 1); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range 200 {
			srv.Mention(fmt.Sprintf("C0B%03d", j%10), fmt.Sprintf("U0USER%d", j%20), fmt.Sprintf("burst %d thread %d", i, j), "")
		}
		if err := srv.WaitAllAcked(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var lat []time.Duration
	for _, a := range srv.Acks() {
		lat = append(lat, a.Latency)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ack-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ack-ms")
	b.ReportMetric(float64(len(lat))/float64(b.N), "acks/op")
}

// dedupHandler is a Receive as cheap as the bridge's could be: an in-memory
// de-duplication by event id and by (channel, ts).
type dedupHandler struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (h *dedupHandler) Receive(_ context.Context, in chat.Inbound) (chat.Receipt, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := in.Thread.Channel + "/" + in.MessageID
	if h.seen[in.EventID] || h.seen[k] {
		h.seen[in.EventID] = true
		return chat.Duplicate, nil
	}
	h.seen[in.EventID], h.seen[k] = true, true
	return chat.Accepted, nil
}

func (h *dedupHandler) Describe(chat.Inbound) (string, string, error) { return "", "", nil }

func (h *dedupHandler) ActiveThreads(context.Context) ([]chat.ThreadCursor, error) { return nil, nil }

// BenchmarkRenderSplit measures splitting a long answer dense in <, > and &
// (40,000 characters of HTML, shell and prose) and rendering every message
// as the adapter sends it. The status preview does this on every render
// (about once a second while an answer streams):
//
//   - measured: split by Measure, the length after mrkdwn escaping, as the
//     bridge does;
//   - runes: split by rune count, which runs over chat.update's 4,000
//     characters after escaping, for the cost of measuring.
func BenchmarkRenderSplit(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("Ping <!channel> [x](!here) &lt;!here&gt; @channel\n\n```html\n")
	for i := 0; sb.Len() < 15000; i++ {
		fmt.Fprintf(&sb, "<div id=\"L%04d\">&nbsp;<a href=\"?a=1&b=2\">&lt;!here&gt;</a></div>\n", i)
	}
	sb.WriteString("```\n\n```sh\n")
	for i := 0; sb.Len() < 30000; i++ {
		fmt.Fprintf(&sb, "test -f a && cat <in >out 2>&1 || echo \"<@U0BOSS001> %04d\"\n", i)
	}
	sb.WriteString("```\n\n")
	for i := 0; sb.Len() < 40000; i++ {
		fmt.Fprintf(&sb, "In prose a<b && c>d, see [the docs](https://example.com/%d?a=1&b=2) and **this** <!here>.\n", i)
	}
	md := sb.String()
	for _, bc := range []struct {
		name    string
		measure func(string) int
	}{{"measured", Measure}, {"runes", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			longest, n, cut := 0, 0, 0
			for b.Loop() {
				chunks := mdsplit.Chunks(md, MaxMessageChars, bc.measure)
				n, cut = len(chunks), 0
				for _, c := range chunks {
					if strings.HasSuffix(render(c), truncatedNotice) {
						cut++
					}
					longest = max(longest, utf8.RuneCountInString(Mrkdwn(c)))
				}
			}
			// longest-chars is before the adapter's safety net, which
			// truncates anything over 4,000 (truncated-msgs).
			b.ReportMetric(float64(n), "msgs")
			b.ReportMetric(float64(cut), "truncated-msgs")
			b.ReportMetric(float64(longest), "longest-chars")
		})
	}
}
