package workspace

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Config configures a Manager.
type Config struct {
	// DataDir holds the mirrors, workspaces and their scratch folders.
	DataDir string
	// Repos are the repositories threads may work on.
	Repos []Repo
	// BranchPrefix starts every branch the bot creates and the only branches
	// it pushes; "bot/" when empty.
	BranchPrefix string
	// Author is the bot's identity for commits; threadsmith
	// <threadsmith@localhost> when empty.
	Author Identity
	// IdleTTL is how long a closed workspace may sit unused before its folder
	// is removed (its branch stays); 7 days when zero.
	IdleTTL time.Duration
	// GitTimeout bounds every network git call (fetch, push, listing the
	// remote) and every call that reads the work tree (status, staging,
	// diffs); 2 minutes when zero.
	GitTimeout time.Duration
	// CleanupInterval is how often the background janitor removes idle
	// workspaces and runs `git gc --auto` on mirrors; 1 hour when zero,
	// never when negative (call Cleanup yourself).
	CleanupInterval time.Duration
	// NoCaches leaves out the repositories' cache folders: CacheDir is "".
	NoCaches bool
	// Logger receives the package's logs; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock for idle times and commit dates; time.Now when nil.
	Now func() time.Time
}

// Repo is one configured repository.
type Repo struct {
	// Name is what users type (`repo=<name>`); letters, digits, '.', '_', '-'.
	Name string
	// URL of the remote: a local path, file://, http(s):// or ssh
	// (ssh://git@host/owner/repo.git or git@host:owner/repo.git). Credentials
	// in an https URL are moved out of it (into Username/Token) so they never
	// reach disk.
	URL string
	// DefaultBranch is where new thread branches start; "main" when empty.
	DefaultBranch string
	// Token authenticates https remotes (as the Basic-auth password).
	Token string
	// Username goes with Token; TokenUser of the URL's host when empty.
	Username string
	// SSHKeyFile is a private key for ssh remotes (no passphrase).
	SSHKeyFile string
	// SSHKnownHosts is a known_hosts file with the remote's host key;
	// ~/.ssh/known_hosts when empty. Unknown host keys are refused.
	SSHKnownHosts string
	// Forge is "github", "gitlab", "bitbucket", "gitea" or "none"; guessed
	// from the host when empty. It decides the compare-link format.
	Forge string
}

// Identity is a name and an email, as in a commit's author line.
type Identity struct {
	Name  string
	Email string
}

func (id Identity) String() string { return id.Name + " <" + id.Email + ">" }

// defaultGitTimeout bounds a network git call when nothing else does.
const defaultGitTimeout = 2 * time.Minute

var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// withDefaults validates cfg and fills in defaults. Errors name the key.
func (cfg Config) withDefaults() (Config, error) {
	var errs []error
	if cfg.DataDir == "" {
		errs = append(errs, errors.New("workspace: data_dir is required"))
	} else if abs, err := filepath.Abs(cfg.DataDir); err != nil {
		errs = append(errs, fmt.Errorf("workspace: data_dir: %w", err))
	} else {
		cfg.DataDir = abs
	}
	if cfg.BranchPrefix == "" {
		cfg.BranchPrefix = "bot/"
	}
	if !ValidBranchName(cfg.BranchPrefix+"x") || strings.Contains(cfg.BranchPrefix, "*") {
		errs = append(errs, fmt.Errorf("workspace: branch_prefix %q does not make valid branch names", cfg.BranchPrefix))
	}
	if cfg.Author.Name == "" {
		cfg.Author.Name = "threadsmith"
	}
	if cfg.Author.Email == "" {
		cfg.Author.Email = "threadsmith@localhost"
	}
	if strings.ContainsAny(cfg.Author.Name+cfg.Author.Email, "<>\n") {
		errs = append(errs, errors.New("workspace: author name and email must not contain '<', '>' or newlines"))
	}
	if cfg.IdleTTL == 0 {
		cfg.IdleTTL = 7 * 24 * time.Hour
	}
	if cfg.GitTimeout <= 0 {
		cfg.GitTimeout = defaultGitTimeout
	}
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Repos) == 0 {
		errs = append(errs, errors.New("workspace: repos: at least one repository is required"))
	}
	seen := map[string]bool{}
	repos := make([]Repo, 0, len(cfg.Repos))
	for i, r := range cfg.Repos {
		r, err := r.normalize()
		if err != nil {
			errs = append(errs, fmt.Errorf("workspace: repos[%d]: %w", i, err))
			continue
		}
		if seen[r.Name] {
			errs = append(errs, fmt.Errorf("workspace: repos[%d]: duplicate name %q", i, r.Name))
		}
		seen[r.Name] = true
		repos = append(repos, r)
	}
	cfg.Repos = repos
	return cfg, errors.Join(errs...)
}

// transport kinds of a remote URL.
const (
	kindLocal = "local"
	kindHTTP  = "http"
	kindSSH   = "ssh"
)

// scpLikeRE matches git's scp-like ssh syntax: [user@]host:path.
var scpLikeRE = regexp.MustCompile(`^(?:[^@/]+@)?[^/:]+:[^/]`)

func (r Repo) normalize() (Repo, error) {
	if !repoNameRE.MatchString(r.Name) {
		return r, fmt.Errorf("name %q: use letters, digits, '.', '_' or '-'", r.Name)
	}
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	if !ValidBranchName(r.DefaultBranch) {
		return r, fmt.Errorf("default_branch %q is not a valid branch name", r.DefaultBranch)
	}
	switch r.Forge {
	case "", forgeGitHub, forgeGitLab, forgeBitbucket, forgeGitea, forgeNone:
	default:
		return r, fmt.Errorf("forge %q: want github, gitlab, bitbucket, gitea or none", r.Forge)
	}
	if r.URL == "" {
		return r, errors.New("url is required")
	}
	switch r.kind() {
	case kindHTTP:
		u, err := url.Parse(r.URL)
		if err != nil || u.Host == "" {
			return r, errors.New("url is not a valid http(s) URL")
		}
		if u.User != nil {
			// Credentials in the URL would be written to the mirror's config;
			// keep them in memory only.
			if p, ok := u.User.Password(); ok && r.Token == "" {
				r.Token = p
				if r.Username == "" {
					r.Username = u.User.Username()
				}
			} else if !ok && r.Token == "" {
				r.Token = u.User.Username() // https://<token>@host form
			}
			u.User = nil
			r.URL = u.String()
		}
		if r.Username == "" {
			r.Username = TokenUser(u.Hostname())
		}
	case kindSSH:
		for key, f := range map[string]*string{"ssh_key_file": &r.SSHKeyFile, "ssh_known_hosts": &r.SSHKnownHosts} {
			if *f == "" {
				continue
			}
			abs, err := filepath.Abs(*f)
			if err == nil {
				_, err = os.Stat(abs)
			}
			if err != nil {
				return r, fmt.Errorf("%s: %w", key, err)
			}
			*f = abs
		}
	case kindLocal:
		p := strings.TrimPrefix(r.URL, "file://")
		if !strings.HasPrefix(r.URL, "file://") {
			abs, err := filepath.Abs(p)
			if err != nil {
				return r, fmt.Errorf("url: %w", err)
			}
			r.URL = abs
		}
	}
	return r, nil
}

func (r Repo) kind() string {
	switch {
	case strings.HasPrefix(r.URL, "http://"), strings.HasPrefix(r.URL, "https://"):
		return kindHTTP
	case strings.HasPrefix(r.URL, "ssh://"), strings.HasPrefix(r.URL, "git+ssh://"):
		return kindSSH
	case strings.HasPrefix(r.URL, "file://"), strings.HasPrefix(r.URL, "/"), strings.HasPrefix(r.URL, "."):
		return kindLocal
	case scpLikeRE.MatchString(r.URL):
		return kindSSH
	default:
		return kindLocal
	}
}

// protocol is the list of transports git may use for the remote, in
// GIT_ALLOW_PROTOCOL's syntax.
func (r Repo) protocol() string {
	switch r.kind() {
	case kindHTTP:
		if strings.HasPrefix(r.URL, "https://") {
			return "https"
		}
		// A plain-http remote may redirect to https on the same server.
		return "http:https"
	case kindSSH:
		return "ssh"
	default:
		return "file"
	}
}

// TokenUser is the Basic-auth user name a forge expects with a token, by
// the remote's host: "oauth2" for GitLab, "x-token-auth" for Bitbucket,
// "x-access-token" otherwise (GitHub; Gitea accepts any).
func TokenUser(host string) string {
	switch h := strings.ToLower(host); {
	case strings.Contains(h, "gitlab"):
		return "oauth2"
	case strings.Contains(h, "bitbucket"):
		return "x-token-auth"
	default:
		return "x-access-token"
	}
}
