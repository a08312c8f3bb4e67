package slackfake_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// BenchmarkMentionBurstAck measures the floor under the Slack adapter's ack-latency
// target: a burst of 200 mentions in 200 threads (400 envelopes) through the fake
// and a slack-go client that acks every envelope at once, with no adapter between.
func BenchmarkMentionBurstAck(b *testing.B) {
	srv := slackfake.New(b, slackfake.WithoutBotEcho())
	slackfake.StartAckingClient(b, srv)
	wait, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if err := srv.WaitConnections(wait, 1); err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	for i := range b.N {
		for j := range 200 {
			srv.Mention(fmt.Sprintf("C0B%03d", j%10), "U0ALICE", fmt.Sprintf("burst %d thread %d", i, j), "")
		}
		if err := srv.WaitAllAcked(wait); err != nil {
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
}
