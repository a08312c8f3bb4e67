package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

const (
	crashEnv        = "THREADSMITH_STORAGE_CRASH_HELPER"
	crashSessions   = 2
	crashMaxEntries = 3000
)

// TestHelperProcess is the writer the crash test kills. It is a no-op unless
// started by TestKillNineLosesNothingCommitted.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(crashEnv) != "1" {
		t.Skip("helper process for the crash test")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, os.Getenv("DB"), quiet)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	threadID, _ := strconv.ParseInt(os.Getenv("THREAD"), 10, 64)
	round := os.Getenv("ROUND")
	var mu sync.Mutex
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Printf(format+"\n", args...); err != nil {
			os.Exit(4) // the parent is gone
		}
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(5)
	}
	for i, sid := range strings.Split(os.Getenv("SESSIONS"), ",") {
		all := genEntries(uint64(i), crashMaxEntries)
		go func() {
			stored, err := db.LoadEntries(ctx, sid)
			if err != nil {
				fail(err)
			}
			// Resume where the previous (killed) writer stopped; alternate
			// single entries and pairs, as the agent's events do.
			for seq := transcript.BuildContext(stored).NextSeq; seq < crashMaxEntries; {
				n := 1 + seq%2
				batch := all[seq:min(seq+n, crashMaxEntries)]
				if err := db.AppendEntries(ctx, sid, batch); err != nil {
					fail(err)
				}
				for _, e := range batch {
					report("E %d %d", i, e.Seq)
				}
				seq += int64(len(batch))
			}
		}()
	}
	// Input arrives meanwhile, until the parent kills this process.
	for k := 0; ; k++ {
		ev := fmt.Sprintf("Ev-%s-%d", round, k)
		id, dup, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", EventID: ev, Channel: "C1",
			MessageID: fmt.Sprintf("%s.%06d", round, k), ThreadID: threadID, Text: strings.Repeat("x", k%500), Mode: storage.ModePrompt})
		if err != nil {
			fail(err)
		}
		if dup {
			fail(fmt.Errorf("%s reported duplicate", ev))
		}
		report("I %s %d", ev, id)
	}
}

// A writer killed with SIGKILL in the middle of writing loses nothing it had
// reported committed, and the file stays sound. Three rounds, each resuming
// from what the previous one left.
func TestKillNineLosesNothingCommitted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db := openAt(t, path)
	th := newThread(t, db, "slack", "1.0")
	var sids []string
	for range crashSessions {
		s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{})
		if err != nil {
			t.Fatal(err)
		}
		sids = append(sids, s.ID)
	}
	db.Close()

	reportedSeq := make([]int64, crashSessions) // highest seq reported per session
	for i := range reportedSeq {
		reportedSeq[i] = -1
	}
	reportedInbound := map[string]int64{}
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"=1", "DB="+path, "THREAD="+strconv.FormatInt(th.ID, 10),
			"SESSIONS="+strings.Join(sids, ","), "ROUND="+strconv.Itoa(round))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		entryLines, inboundLines, killed := 0, 0, false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 3 && f[0] == "E":
				i, _ := strconv.Atoi(f[1])
				seq, _ := strconv.ParseInt(f[2], 10, 64)
				reportedSeq[i] = max(reportedSeq[i], seq)
				entryLines++
			case len(f) == 3 && f[0] == "I":
				id, _ := strconv.ParseInt(f[2], 10, 64)
				reportedInbound[f[1]] = id
				inboundLines++
			default:
				continue // test framework chatter
			}
			// Kill in full flight, at a different point each round; keep
			// reading what it reported before it died.
			if entryLines >= 100+round*77 && inboundLines >= 20 && !killed {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		err = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: the writer ended before it was killed: %v\n%s", round, err, stderr.String())
		}
		if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
			t.Fatalf("round %d: writer exited with %v, want killed by a signal\n%s", round, err, stderr.String())
		}

		db := openAt(t, path)
		if err := db.Check(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, sid := range sids {
			got := transcript.WithoutUnits(load(t, db, sid))
			if int64(len(got)) <= reportedSeq[i] {
				t.Fatalf("round %d: session %d has %d entries, but seq %d was reported committed", round, i, len(got), reportedSeq[i])
			}
			// Whatever is there is exactly what was written, with no gap.
			want := genEntries(uint64(i), crashMaxEntries)
			for j := range got {
				if !reflect.DeepEqual(got[j], want[j]) {
					t.Fatalf("round %d: session %d: stored entry %d differs from the one written", round, i, j)
				}
			}
		}
		for ev, id := range reportedInbound {
			in, err := db.GetInbound(ctx, id)
			if err != nil || in.EventID != ev {
				t.Fatalf("round %d: inbound %s (id %d) reported committed, read back %+v, %v", round, ev, id, in, err)
			}
		}
		db.Close()
		t.Logf("round %d: %d inbound and %v entries reported before the kill, all present", round, len(reportedInbound), reportedSeq)
	}
}
