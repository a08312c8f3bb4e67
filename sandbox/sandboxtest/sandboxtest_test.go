package sandboxtest

import (
	"encoding/base64"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestShowsSeesTheSecretHoweverItIsSpelled(t *testing.T) {
	const secret = "sk-live-1234-9d8c7b6a5f4e"
	rev := "e4f5a6b7c8d9-4321-evil-ks"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	// base64(1) wraps at 76 columns.
	wrapped := b64("OPENAI_API_KEY=" + secret + "\nPATH=/usr/bin:/bin\nHOME=/root\nSOMETHING_LONGER=to wrap the output\n")
	wrapped = wrapped[:76] + "\n" + wrapped[76:]
	for _, out := range []string{
		"key: " + secret,
		rev + "\n",
		"x " + b64(secret) + " y",
		b64("a" + rev),
		wrapped,
		base64.RawStdEncoding.EncodeToString([]byte("ab" + secret)),
		"mem 1: read 0 bytes\n" + wrapped,
		"ab\n" + b64("x"+secret),
	} {
		if !Shows(out, secret) {
			t.Errorf("Shows(%q) = false", out)
		}
	}
	for _, out := range []string{"", "sk-live-1234", b64("sk-live-1234-9d8c7b6a5f4"), "cat: /proc/1/environ: Permission denied"} {
		if Shows(out, secret) {
			t.Errorf("Shows(%q) = true", out)
		}
	}
}

// MemGrep finds a secret that lives only in another process's memory (here
// its environment) when nothing stands in the way.
func TestMemGrepReadsAnotherProcessesMemory(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is needed")
	}
	secret := "sk-memtest-" + strconv.Itoa(os.Getpid()) + "-c0ffee"
	victim := exec.Command("sleep", "60")
	victim.Env = []string{"VICTIM_KEY=" + secret}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer victim.Wait()
	defer victim.Process.Kill()
	out, err := exec.Command("perl", "-e", MemGrep, strconv.Itoa(victim.Process.Pid)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mem "+strconv.Itoa(victim.Process.Pid)+": "+secret) {
		t.Fatalf("MemGrep did not find the secret: %v\n%s", err, out)
	}
}
