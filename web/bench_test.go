package web

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/threadsmith/threadsmith/internal/sessiongen"
)

// BenchmarkSessionPage5000 times a 5,000-entry session's page (sessiongen's
// session, 10.5 MB of JSON: a long-lived thread): the whole page over HTTP,
// one live-follow rebuild (build and render every piece: what each open
// page costs the server at every change of its thread), and the floor under
// both, reading the entries (LoadEntries).
func BenchmarkSessionPage5000(b *testing.B) {
	f := newFixture(b)
	f.prompt("alice", "start")
	entries := sessiongen.Entries(1, 5000)
	for i := range entries {
		entries[i].Seq = f.seq
		f.seq++
	}
	for i := 0; i < len(entries); i += 500 {
		if err := f.db.AppendEntries(f.ctx, f.sess.ID, entries[i:min(i+500, len(entries))]); err != nil {
			b.Fatal(err)
		}
	}
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	srv := f.server(Options{})
	page := f.pageURL(srv, s)
	b.Run("LoadEntries", func(b *testing.B) {
		for b.Loop() {
			if es, err := f.db.LoadEntries(f.ctx, f.sess.ID); err != nil || len(es) != 5001 {
				b.Fatalf("LoadEntries = %d entries, %v", len(es), err)
			}
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			p, err := s.build(f.ctx, f.thread.ID, "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.renderPieces(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GET", func(b *testing.B) {
		size := 0
		for b.Loop() {
			code, body := get(b, page, nil)
			if code != http.StatusOK {
				b.Fatalf("GET = %d", code)
			}
			size = len(body)
		}
		b.ReportMetric(float64(size)/1e6, "MB/page")
		b.Logf("the page: %s bytes", strconv.Itoa(size))
	})
}
