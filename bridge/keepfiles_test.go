package bridge

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
)

// expiringChat is the in-process platform with links that expire, as
// Discord's do.
type expiringChat struct{ *chatfake.Adapter }

func (expiringChat) LinksExpire() bool { return true }

// Files whose links expire are kept in the thread's scratch folder when
// their message is accepted, within the thread's disk quota: a file that
// would pass it keeps only its link, and a Stored the platform set is not
// taken for one the bridge made.
func TestFilesAreKeptWithinTheThreadsQuota(t *testing.T) {
	t.Parallel()
	const quota = 256 << 10
	r := newRig(t, func(c *Config, p *Platform) {
		c.Agent.DiskQuota = tools.Quota{Bytes: quota, Files: 1000}
		p.Adapter = expiringChat{p.Adapter.(*chatfake.Adapter)}
	})
	small, big := "small notes", strings.Repeat("x", quota)
	r.chat.AddFile("https://files.test/small.txt", small)
	r.chat.AddFile("https://files.test/big.bin", big)
	th := testThread("90.1")
	in := chat.Inbound{Thread: th, EventID: "e1", MessageID: "90.2", Attachments: []chat.Attachment{
		{Name: "small.txt", MimeType: "text/plain", Size: int64(len(small)), URL: "https://files.test/small.txt", Stored: "../../../etc/passwd"},
		{Name: "big.bin", Size: int64(len(big)), URL: "https://files.test/big.bin"},
	}}
	h := &handler{b: r.b, p: r.b.platforms["test"]}
	h.keepFiles(r.ctx, &in, "app")

	_, scratch := r.wsm.ThreadDirs("app", wsKey(th))
	got := in.Attachments
	if got[0].Stored == "" || !strings.HasPrefix(got[0].Stored, inboxDir+"/") {
		t.Fatalf("small.txt stored as %q, want kept in the scratch folder's inbox", got[0].Stored)
	}
	if data, err := os.ReadFile(filepath.Join(scratch, got[0].Stored)); err != nil || string(data) != small {
		t.Errorf("the kept small.txt holds %q (%v), want its content", data, err)
	}
	if got[1].Stored != "" {
		t.Errorf("big.bin, which would pass the quota, stored as %q; want only its link", got[1].Stored)
	}
	left, _ := filepath.Glob(filepath.Join(scratch, inboxDir, "*", "*"))
	if len(left) != 1 {
		t.Errorf("files in the inbox %q, want small.txt alone", left)
	}

	// Not stored after all (a duplicate, a failed write): nothing is left.
	h.dropKept(in, "app")
	if left, _ := filepath.Glob(filepath.Join(scratch, inboxDir, "*")); len(left) != 0 {
		t.Errorf("after dropKept the inbox holds %q, want nothing", left)
	}
}

// The scratch folder is the agent's to change: a link it put where the
// inbox goes does not lead the kept files (or their folders) out of it, and
// a pipe where a file is written is refused, never opened (which would wait
// for a reader).
func TestKeptFilesStayInTheScratchFolder(t *testing.T) {
	t.Parallel()
	scratch, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(scratch, inboxDir)); err != nil {
		t.Fatal(err)
	}
	if err := writeKept(scratch, inboxDir+"/0a/0", []byte("kept")); err == nil {
		t.Error("writeKept through a link out of the scratch folder succeeded")
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Errorf("the link's target holds %v, want nothing made there", left)
	}

	if err := os.Remove(filepath.Join(scratch, inboxDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(scratch, inboxDir, "0b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(scratch, inboxDir, "0b", "0.tmp"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- writeKept(scratch, inboxDir+"/0b/0", []byte("kept")) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("writeKept over a pipe succeeded")
		}
	case <-time.After(5 * time.Second):
		// Unblock the writer so the test ends.
		if f, err := os.OpenFile(filepath.Join(scratch, inboxDir, "0b", "0.tmp"), os.O_RDONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("writeKept blocked on a pipe in the scratch folder")
	}
}

// A kept file is read back through safefile: what the agent put in its
// place in the scratch folder (a link to a secret of the bot's, a pipe, a
// device) is refused at once, and the file is downloaded again instead.
func TestKeptFileReadBackRefusesWhatTheAgentPutThere(t *testing.T) {
	t.Parallel()
	scratch := t.TempDir()
	secret := filepath.Join(t.TempDir(), "threadsmith.yaml")
	if err := os.WriteFile(secret, []byte("api_key: sk-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(scratch, inboxDir, "0c")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(string) error{
		"link": func(p string) error { return os.Symlink(secret, p) },
		"zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"pipe": func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"big":  func(p string) error { return os.WriteFile(p, make([]byte, 2<<10), 0o600) },
	} {
		if err := plant(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			data, err := readStored(scratch, inboxDir+"/0c/"+name, 1<<10)
			if strings.Contains(string(data), "sk-secret") {
				t.Errorf("%s: the secret was read: %q", name, data)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: read back, want refused", name)
			}
		case <-time.After(5 * time.Second):
			if f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("%s: the read back blocked", name)
		}
	}
}
