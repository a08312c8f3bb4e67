package storagetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// liveFromRows is what LoadLiveEntries must give: the live entries of
// every stored entry, read from the rows.
func (s *suite) liveFromRows(sessionID string) []transcript.Entry {
	s.t.Helper()
	all := s.load(sessionID)
	firstKept := int64(-1)
	for _, e := range all {
		if e.Type == transcript.EntryCompaction && e.Compaction != nil {
			firstKept = e.Compaction.FirstKeptSeq
		}
	}
	var live []transcript.Entry
	for _, e := range all {
		if e.Seq >= firstKept || e.Type == transcript.EntryModelChange || e.Type == transcript.EntryThinkingLevel {
			live = append(live, e)
		}
	}
	return transcript.WithoutUnits(live)
}

func (s *suite) checkLive(what, sessionID string) {
	s.t.Helper()
	got, err := s.db.LoadLiveEntries(s.ctx, sessionID)
	if err != nil {
		s.t.Fatalf("%s: LoadLiveEntries: %v", what, err)
	}
	if want := s.liveFromRows(sessionID); !reflect.DeepEqual(transcript.WithoutUnits(got), want) {
		s.t.Fatalf("%s: LoadLiveEntries gave %d entries that differ from the %d live entries of the rows", what, len(got), len(want))
	}
}

// A session appended to in batches, with snapshots taken now and then (some
// with nothing new since the last), across several compactions and a
// reopen: LoadLiveEntries always gives the live entries of the rows.
func testSnapshots(t *testing.T, s *suite) {
	if err := s.db.SnapshotSession(s.ctx, "no-such-session"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("SnapshotSession(unknown) = %v, want ErrNotFound", err)
	}
	ss := s.session(s.thread("slack", "1.0"))
	if err := s.db.SnapshotSession(s.ctx, ss.ID); err != nil {
		t.Fatalf("SnapshotSession of an empty session: %v", err)
	}
	entries := sessiongen.Generate(4, sessiongen.Shape{Entries: 500, CompactAt: 30_000, Keep: 8_000, ResultMin: 200, ResultMax: 900})
	compactions := 0
	for _, e := range entries {
		if e.Type == transcript.EntryCompaction {
			compactions++
		}
	}
	if compactions < 3 {
		t.Fatalf("the generated session has %d compactions; the test needs several", compactions)
	}
	// Settings between the compactions, as a user's !model would leave.
	for i := 40; i < len(entries); i += 97 {
		entries[i] = transcript.Entry{Seq: entries[i].Seq, Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Model: "m" + string(rune('a'+i%26))}}
	}
	for i, end := 0, 0; i < len(entries); i = end {
		end = min(i+1+i%7, len(entries))
		s.append(ss.ID, entries[i:end]...)
		if i%3 == 0 {
			if err := s.db.SnapshotSession(s.ctx, ss.ID); err != nil {
				t.Fatalf("SnapshotSession after %d entries: %v", i, err)
			}
			if i%2 == 0 {
				if err := s.db.SnapshotSession(s.ctx, ss.ID); err != nil {
					t.Fatalf("SnapshotSession again: %v", err)
				}
			}
		}
		s.checkLive("after appending", ss.ID)
	}
	s.db = s.reopen()
	s.checkLive("after a reopen", ss.ID)
	c, err := s.db.LoadContext(s.ctx, ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Messages {
		c.Messages[i] = c.Messages[i].WithoutUnits()
	}
	if want := transcript.BuildContext(transcript.WithoutUnits(s.load(ss.ID))); !reflect.DeepEqual(c, want) {
		t.Fatalf("LoadContext: %d messages, model %q; want BuildContext(LoadEntries): %d, %q", len(c.Messages), c.Model, len(want.Messages), want.Model)
	}
}

// An entry stored at or below the snapshot's last seq (the contract lets a
// caller fill a gap in the seqs; an append whose commit its caller did not
// see lands late): the resume still has it, and so does the next snapshot.
func testSnapshotGapFilled(t *testing.T, s *suite) {
	ss := s.session(s.thread("slack", "1.0"))
	for _, seq := range []int64{0, 1, 3} {
		s.append(ss.ID, transcript.MessageEntry(seq, llm.UserText(string(rune('a'+seq)))))
	}
	if err := s.db.SnapshotSession(s.ctx, ss.ID); err != nil {
		t.Fatal(err)
	}
	s.checkLive("snapshot current", ss.ID)
	s.append(ss.ID, transcript.MessageEntry(2, llm.UserText("c, late")), transcript.MessageEntry(4, llm.UserText("e")))
	s.checkLive("a gap filled below the snapshot's last seq", ss.ID)
	if err := s.db.SnapshotSession(s.ctx, ss.ID); err != nil {
		t.Fatal(err)
	}
	s.checkLive("snapshot taken again", ss.ID)
	if live, err := s.db.LoadLiveEntries(s.ctx, ss.ID); err != nil || len(live) != 5 {
		t.Fatalf("LoadLiveEntries = %d entries, %v; want 5", len(live), err)
	}
}

// A compaction after the snapshot that keeps entries the snapshot left out
// (an earlier first kept entry than the snapshot's own compaction): the
// entries are read from the rows.
func testSnapshotBehindACompaction(t *testing.T, s *suite) {
	ss := s.session(s.thread("slack", "1.0"))
	for i := range 6 {
		s.append(ss.ID, transcript.MessageEntry(int64(i), llm.UserText(string(rune('a'+i)))))
	}
	s.append(ss.ID, transcript.Entry{Seq: 6, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "S1", FirstKeptSeq: 4}})
	s.append(ss.ID, transcript.MessageEntry(7, llm.UserText("h")))
	if err := s.db.SnapshotSession(s.ctx, ss.ID); err != nil {
		t.Fatal(err)
	}
	s.checkLive("snapshot current", ss.ID)
	s.append(ss.ID, transcript.Entry{Seq: 8, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "S2", FirstKeptSeq: 2}})
	s.checkLive("a compaction keeping more than the snapshot", ss.ID)
	if err := s.db.SnapshotSession(s.ctx, ss.ID); err != nil {
		t.Fatal(err)
	}
	s.checkLive("snapshot taken again", ss.ID)
}

// SnapshotRow reads and writes the one stored snapshot behind a backend's
// back (its test's own connection), for CheckResumeReadsTheSnapshot.
type SnapshotRow struct {
	Get func(t *testing.T) (upto int64, snapshot []byte)
	Set func(t *testing.T, upto int64, snapshot []byte)
}

// CheckResumeReadsTheSnapshot holds a backend (db, fresh) to what
// LoadLiveEntries promises of snapshots, changing the stored one through
// row: a resume reads the snapshot, not the rows (a planted one is what it
// gives); a damaged one is passed over for the rows and replaced by the next
// SnapshotSession; one up to a higher seq is never replaced by one up to a
// lower seq.
func CheckResumeReadsTheSnapshot(t *testing.T, db storage.Store, row SnapshotRow) {
	ctx := context.Background()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.0"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	answer := transcript.MessageEntry(1, llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("ok")}, StopReason: llm.StopReasonStop})
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{transcript.MessageEntry(0, llm.UserText("from the rows")), answer}); err != nil {
		t.Fatal(err)
	}
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	firstText := func() string {
		t.Helper()
		es, err := db.LoadLiveEntries(ctx, s.ID)
		if err != nil || len(es) != 2 {
			t.Fatalf("LoadLiveEntries = %d entries, %v", len(es), err)
		}
		return es[0].Message.Content[0].Text
	}
	if got := firstText(); got != "from the rows" {
		t.Fatalf("resumed text %q", got)
	}
	upto, _ := row.Get(t)
	if upto != 1 {
		t.Fatalf("the snapshot holds entries up to seq %d, want 1", upto)
	}

	planted, err := backend.EncodeSnapshot([]transcript.Entry{transcript.MessageEntry(0, llm.UserText("from the snapshot")), answer})
	if err != nil {
		t.Fatal(err)
	}
	row.Set(t, 1, planted)
	if got := firstText(); got != "from the snapshot" {
		t.Fatalf("resumed text %q: the snapshot was not read", got)
	}

	damaged := append([]byte(nil), planted...)
	damaged[len(damaged)/2] ^= 0xff
	row.Set(t, 1, damaged)
	if got := firstText(); got != "from the rows" {
		t.Fatalf("resumed text %q with a damaged snapshot; want the rows'", got)
	}
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, stored := row.Get(t); !decodes(stored) {
		t.Fatal("the damaged snapshot was not replaced")
	}

	// A snapshot said to hold entries up to a higher seq (as one another
	// writer took after entries this one has not read) is never replaced by
	// one up to a lower seq, even when this one cannot use it.
	row.Set(t, 101, damaged)
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if upto, stored := row.Get(t); upto != 101 || string(stored) != string(damaged) {
		t.Fatalf("a snapshot up to seq %d replaced one up to seq 101", upto)
	}

	// A snapshot read that missed a row (here: a stored snapshot lacking
	// seq 0, as if that entry had been stored late, after the read) is not
	// stored: every resume after would lack that entry too.
	lacking, err := backend.EncodeSnapshot([]transcript.Entry{answer})
	if err != nil {
		t.Fatal(err)
	}
	row.Set(t, 1, lacking)
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{transcript.MessageEntry(2, llm.UserText("more"))}); err != nil {
		t.Fatal(err)
	}
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if upto, stored := row.Get(t); upto != 1 || string(stored) != string(lacking) {
		t.Fatalf("a snapshot up to seq %d, built on a read that missed a row, was stored", upto)
	}

	// After compactions and settings changes, a snapshot is taken (the
	// check above counts the live rows as the snapshot holds them).
	row.Set(t, 1, damaged)
	more := []transcript.Entry{
		{Seq: 3, Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Model: "m2"}},
		transcript.MessageEntry(4, llm.UserText("d")),
		{Seq: 5, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "S", FirstKeptSeq: 4}},
		{Seq: 6, Type: transcript.EntryThinkingLevel, ThinkingLevel: "high"},
		transcript.MessageEntry(7, llm.UserText("g")),
		{Seq: 8, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "S2", FirstKeptSeq: 7}},
		transcript.MessageEntry(9, llm.UserText("j")),
	}
	if err := db.AppendEntries(ctx, s.ID, more); err != nil {
		t.Fatal(err)
	}
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if upto, stored := row.Get(t); upto != 9 || !decodes(stored) {
		t.Fatalf("after compactions the stored snapshot is up to seq %d (decodes: %v); want a new one up to 9", upto, decodes(stored))
	}
	live, err := db.LoadLiveEntries(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range live {
		seqs = append(seqs, e.Seq)
	}
	if want := []int64{3, 6, 7, 8, 9}; !slices.Equal(seqs, want) {
		t.Fatalf("live seqs from the snapshot %v, want %v", seqs, want)
	}
}

func decodes(snapshot []byte) bool {
	_, err := backend.DecodeSnapshot(snapshot)
	return err == nil
}
