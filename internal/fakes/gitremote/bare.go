package gitremote

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Repo is a bare repository on disk that plays a remote.
type Repo struct {
	// Path is the bare repository's directory; usable as a remote URL as is.
	Path string
	// DefaultBranch is the branch the seed commit went to.
	DefaultBranch string
}

// Options describe a new bare repository.
type Options struct {
	// DefaultBranch receives the seed commit; "main" when empty.
	DefaultBranch string
	// Files are the seed commit's files, path → content. No seed commit (an
	// empty repository) when nil.
	Files map[string]string
	// Name of the directory (without ".git"); "remote" when empty.
	Name string
}

// NewBare creates a bare repository in a fresh temporary directory and seeds
// its default branch with opts.Files in one commit.
func NewBare(tb testing.TB, opts Options) *Repo {
	tb.Helper()
	if opts.DefaultBranch == "" {
		opts.DefaultBranch = "main"
	}
	if opts.Name == "" {
		opts.Name = "remote"
	}
	dir := filepath.Join(tb.TempDir(), opts.Name+".git")
	Git(tb, "", "init", "--quiet", "--bare", "--initial-branch="+opts.DefaultBranch, dir)
	r := &Repo{Path: dir, DefaultBranch: opts.DefaultBranch}
	if opts.Files != nil {
		r.Commit(tb, Change{Branch: opts.DefaultBranch, Files: opts.Files, Message: "Initial commit"})
	}
	return r
}

// URL returns the repository as a file:// URL.
func (r *Repo) URL() string { return "file://" + filepath.ToSlash(r.Path) }

// Change is one commit made directly in the remote, as if a person pushed it.
type Change struct {
	// Branch receives the commit. If it does not exist it is created from
	// From (a branch or sha; the default branch when empty).
	Branch string
	From   string
	// Files to write, path → content; Delete lists paths to remove.
	Files   map[string]string
	Delete  []string
	Message string
	// Author and committer; DefaultName/DefaultEmail when empty.
	Name, Email string
	// When is the commit time; the current time when zero.
	When time.Time
}

// Commit writes one commit on c.Branch with git fast-import (one process,
// so seeding thousands of files is quick) and returns its sha.
func (r *Repo) Commit(tb testing.TB, c Change) string {
	tb.Helper()
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Email == "" {
		c.Email = DefaultEmail
	}
	if c.Message == "" {
		c.Message = "change"
	}
	if c.When.IsZero() {
		c.When = time.Now()
	}
	parent := r.Rev(tb, "refs/heads/"+c.Branch)
	if parent == "" {
		from := c.From
		if from == "" {
			from = r.DefaultBranch
		}
		parent = r.Rev(tb, from)
	}

	var s bytes.Buffer
	fmt.Fprintf(&s, "commit refs/heads/%s\n", c.Branch)
	stamp := fmt.Sprintf("%d +0000", c.When.Unix())
	fmt.Fprintf(&s, "author %s <%s> %s\ncommitter %s <%s> %s\n", c.Name, c.Email, stamp, c.Name, c.Email, stamp)
	fmt.Fprintf(&s, "data %d\n%s\n", len(c.Message), c.Message)
	if parent != "" {
		fmt.Fprintf(&s, "from %s\n", parent)
	}
	for _, p := range sortedKeys(c.Files) {
		fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", quotePath(p), len(c.Files[p]), c.Files[p])
	}
	for _, p := range c.Delete {
		fmt.Fprintf(&s, "D %s\n", quotePath(p))
	}
	s.WriteString("done\n")
	GitInput(tb, r.Path, s.Bytes(), nil, "fast-import", "--quiet", "--done", "--force")
	return r.Rev(tb, "refs/heads/"+c.Branch)
}

// Rev resolves rev to a commit sha, or "" when it does not exist.
func (r *Repo) Rev(tb testing.TB, rev string) string {
	tb.Helper()
	out, err := run(r.Path, nil, nil, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// SetBranch points branch at sha (or deletes it when sha is ""), as a
// person's force push or branch deletion would.
func (r *Repo) SetBranch(tb testing.TB, branch, sha string) {
	tb.Helper()
	if sha == "" {
		Git(tb, r.Path, "update-ref", "-d", "refs/heads/"+branch)
		return
	}
	Git(tb, r.Path, "update-ref", "refs/heads/"+branch, sha)
}

// Branches lists the repository's branch names, sorted.
func (r *Repo) Branches(tb testing.TB) []string {
	tb.Helper()
	out := Git(tb, r.Path, "for-each-ref", "--format=%(refname:strip=2)", "refs/heads/")
	if out == "" {
		return nil
	}
	names := strings.Split(out, "\n")
	sort.Strings(names)
	return names
}

// Files returns every file of rev's tree, path → content (read in one
// `git cat-file --batch`, so large trees are quick).
func (r *Repo) Files(tb testing.TB, rev string) map[string]string {
	tb.Helper()
	out := Git(tb, r.Path, "ls-tree", "-r", "-z", "--full-tree", rev)
	var paths, shas []string
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 3 || fields[1] != "blob" {
			continue
		}
		paths = append(paths, path)
		shas = append(shas, fields[2])
	}
	files := make(map[string]string, len(paths))
	if len(paths) == 0 {
		return files
	}
	batch, err := run(r.Path, []byte(strings.Join(shas, "\n")+"\n"), nil, "cat-file", "--batch")
	if err != nil {
		tb.Fatalf("git cat-file --batch: %v", err)
	}
	// Each object: "<sha> blob <size>\n<content>\n".
	for _, p := range paths {
		header, rest, ok := strings.Cut(batch, "\n")
		f := strings.Fields(header)
		if !ok || len(f) != 3 {
			tb.Fatalf("git cat-file --batch: bad header %q", header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size+1 > len(rest) {
			tb.Fatalf("git cat-file --batch: bad size in %q", header)
		}
		files[p] = strings.TrimRight(rest[:size], "\n")
		batch = rest[size+1:]
	}
	return files
}

// CommitInfo is one commit as read back from the repository.
type CommitInfo struct {
	SHA                           string
	AuthorName, AuthorEmail       string
	CommitterName, CommitterEmail string
	// Message is the full message: subject, blank line, body.
	Message string
}

// Subject is the message's first line.
func (c CommitInfo) Subject() string {
	s, _, _ := strings.Cut(c.Message, "\n")
	return s
}

// Commits lists rev's history, newest first.
func (r *Repo) Commits(tb testing.TB, rev string) []CommitInfo {
	tb.Helper()
	out := Git(tb, r.Path, "log", "--format=%H%x00%an%x00%ae%x00%cn%x00%ce%x00%B%x1e", rev)
	var cs []CommitInfo
	for _, rec := range strings.Split(out, "\x1e") {
		rec = strings.TrimLeft(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x00", 6)
		if len(f) != 6 {
			tb.Fatalf("git log: unexpected record %q", rec)
		}
		cs = append(cs, CommitInfo{SHA: f[0], AuthorName: f[1], AuthorEmail: f[2],
			CommitterName: f[3], CommitterEmail: f[4], Message: strings.TrimRight(f[5], "\n")})
	}
	return cs
}

// GenerateFiles returns n small text files spread over nested directories, as
// a stand-in for a real project's tree (sources, docs, configs). The content
// is deterministic so benchmark runs compare like with like.
func GenerateFiles(n int) map[string]string {
	files := make(map[string]string, n)
	exts := []string{".go", ".md", ".json", ".ts", ".py", ".yaml"}
	for i := range n {
		dir := fmt.Sprintf("pkg%02d/sub%02d", i%40, (i/40)%10)
		name := fmt.Sprintf("%s/file%04d%s", dir, i, exts[i%len(exts)])
		var b strings.Builder
		for l := range 20 + i%60 {
			fmt.Fprintf(&b, "line %d of file %d: the quick brown fox jumps over the lazy dog\n", l, i)
		}
		files[name] = b.String()
	}
	files["README.md"] = "# generated\n"
	return files
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quotePath quotes a path for fast-import when it needs it (spaces, quotes,
// non-ASCII), in the C style git uses: octal escapes for bytes above 0x7e.
func quotePath(p string) string {
	needs := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c > 0x7e || c == '"' || c == '\\' {
			needs = true
		}
	}
	if !needs {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < ' ' || c > 0x7e:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// WriteFile is a test helper that writes content to dir/rel, creating parents.
func WriteFile(tb testing.TB, dir, rel, content string) {
	tb.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}
