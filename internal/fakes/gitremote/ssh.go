package gitremote

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer is a git server over ssh on 127.0.0.1: it accepts one client key
// and runs git-upload-pack / git-receive-pack for the repository path in the
// exec request, as GitHub's ssh endpoint does.
type SSHServer struct {
	// KeyFile is the accepted client's private key (OpenSSH format, 0600).
	KeyFile string
	// OtherKeyFile is a valid key the server does not accept.
	OtherKeyFile string
	// KnownHosts is a known_hosts file listing the server's host key.
	KnownHosts string

	addr string
	ln   net.Listener
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

// NewSSHServer starts an ssh git server; tb.Cleanup stops it.
func NewSSHServer(tb testing.TB) *SSHServer {
	tb.Helper()
	dir := tb.TempDir()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		tb.Fatal(err)
	}
	s := &SSHServer{
		KeyFile:      filepath.Join(dir, "id_ed25519"),
		OtherKeyFile: filepath.Join(dir, "other_ed25519"),
		KnownHosts:   filepath.Join(dir, "known_hosts"),
	}
	clientPub := writeKey(tb, s.KeyFile)
	writeKey(tb, s.OtherKeyFile)

	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(clientPub.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(hostSigner)

	s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s.addr = s.ln.Addr().String()
	line := knownhosts.Line([]string{knownhosts.Normalize(s.addr)}, hostSigner.PublicKey())
	if err := os.WriteFile(s.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.wg.Add(1)
	go s.accept(cfg)
	tb.Cleanup(s.close)
	return s
}

// URL returns repo's ssh:// URL on this server.
func (s *SSHServer) URL(repo *Repo) string {
	return "ssh://git@" + s.addr + filepath.ToSlash(repo.Path)
}

func (s *SSHServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *SSHServer) accept(cfg *ssh.ServerConfig) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c, cfg)
		}()
	}
}

func (s *SSHServer) serveConn(c net.Conn, cfg *ssh.ServerConfig) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveSession(ch, creqs)
		}()
	}
}

// serveSession runs the one git command a session may ask for.
func serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var env []string
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil && kv.Name == "GIT_PROTOCOL" {
				env = append(env, "GIT_PROTOCOL="+kv.Value)
			}
			req.Reply(true, nil)
		case "exec":
			var cmdline struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &cmdline); err != nil {
				req.Reply(false, nil)
				return
			}
			name, path, _ := strings.Cut(cmdline.Command, " ")
			path = strings.Trim(path, "'")
			service := strings.TrimPrefix(name, "git-")
			if service != "upload-pack" && service != "receive-pack" {
				req.Reply(false, nil)
				return
			}
			req.Reply(true, nil)
			cmd := exec.Command("git", service, path)
			cmd.Env = Env(env...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
			code := uint32(0)
			if err := cmd.Run(); err != nil {
				code = 1
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					code = uint32(exit.ExitCode())
				}
			}
			ch.CloseWrite()
			status := make([]byte, 4)
			binary.BigEndian.PutUint32(status, code)
			ch.SendRequest("exit-status", false, status)
			return
		default:
			req.Reply(false, nil)
		}
	}
}

// writeKey writes a new ed25519 private key in OpenSSH format and returns
// its public half.
func writeKey(tb testing.TB, path string) ssh.PublicKey {
	tb.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		tb.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	return sshPub
}
