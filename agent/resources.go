package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/threadsmith/threadsmith/internal/safefile"
)

// Skill is a SKILL.md file: instructions the model loads when a task matches.
type Skill struct {
	Name        string
	Description string
	// Location is how the skill's file is named to the model: relative to the
	// workspace for workspace skills, absolute for configured folders.
	Location string
	// Dir is the folder that relative references in the skill resolve against,
	// named the same way as Location.
	Dir  string
	Body string // the file without its front matter
}

// Template is a prompt template: /name args expands to its body with the
// arguments substituted.
type Template struct {
	Name        string
	Description string
	Body        string
}

// Resources are the skills and templates a session can expand.
type Resources struct {
	Skills    []Skill
	Templates []Template
}

// WorkspaceSkillDirs and WorkspaceTemplateDirs are where a workspace keeps its own
// skills and templates, relative to its root.
var (
	WorkspaceSkillDirs    = []string{".threadsmith/skills", ".agents/skills"}
	WorkspaceTemplateDirs = []string{".threadsmith/prompts"}
)

// MaxResourceBytes is the largest skill or template file read; a larger one
// is left out and reported.
const MaxResourceBytes = 64 << 10

// maxWorkspaceResourceBytes is the most one workspace's skills and templates
// take together: the files past it are left out and reported.
const maxWorkspaceResourceBytes = 1 << 20

// LoadResources reads skills and templates from a workspace (may be "") and from
// configured folders. A skill is a folder holding SKILL.md, or a .md file directly
// in a skills folder; a template is a .md file in a prompts folder. The first
// definition of a name wins: workspace first, then configured folders in order.
//
// The workspace is the agent's to write, so its files are read through
// safefile: no symbolic link is followed, nothing but a regular file is read,
// none past MaxResourceBytes. A file refused so is left out and its
// *safefile.Error (a sentence naming it relative to the workspace) is among
// the returned errors, unwrapped. Configured folders are the operator's: their
// links are followed, but their files too are opened without waiting, regular
// only and capped. Unreadable files are skipped and reported in the returned
// error.
func LoadResources(workspace string, skillDirs, templateDirs []string) (Resources, error) {
	var r Resources
	var errs []error
	seenSkill := map[string]bool{}
	seenTmpl := map[string]bool{}
	type dir struct {
		root  *safefile.Root
		rel   string // the folder in root
		shown string // how the folder is named to the model and in errors
	}
	var sdirs, tdirs []dir
	if workspace != "" {
		root, err := safefile.OpenRoot(workspace, "the worktree")
		if err != nil {
			errs = append(errs, fmt.Errorf("workspace: %w", err))
		} else {
			defer root.Close()
			root.Budget(maxWorkspaceResourceBytes)
			for _, d := range WorkspaceSkillDirs {
				sdirs = append(sdirs, dir{root, d, d})
			}
			for _, d := range WorkspaceTemplateDirs {
				tdirs = append(tdirs, dir{root, d, d})
			}
		}
	}
	for _, d := range skillDirs {
		sdirs = append(sdirs, dir{safefile.OpenFollowing(d, d), ".", d})
	}
	for _, d := range templateDirs {
		tdirs = append(tdirs, dir{safefile.OpenFollowing(d, d), ".", d})
	}
	for _, d := range sdirs {
		skills, err := loadSkills(d.root, d.rel, d.shown)
		if err != nil {
			errs = append(errs, err)
		}
		for _, s := range skills {
			if !seenSkill[s.Name] {
				seenSkill[s.Name] = true
				r.Skills = append(r.Skills, s)
			}
		}
	}
	for _, d := range tdirs {
		tmpls, err := loadTemplates(d.root, d.rel, d.shown)
		if err != nil {
			errs = append(errs, err)
		}
		for _, t := range tmpls {
			if !seenTmpl[t.Name] {
				seenTmpl[t.Name] = true
				r.Templates = append(r.Templates, t)
			}
		}
	}
	return r, errors.Join(errs...)
}

// readResource reads one skill or template file; a refusal is returned as
// it is, other errors named with shown.
func readResource(root *safefile.Root, rel, what, shown string) ([]byte, error) {
	data, err := root.ReadFile(rel, MaxResourceBytes)
	if _, ok := safefile.Refused(err); ok || err == nil {
		return data, err
	}
	return nil, fmt.Errorf("%s %s: %w", what, shown, err)
}

// inRoot joins a folder of a root and a name in it.
func inRoot(dir, name string) string {
	if dir == "." {
		return name
	}
	return path.Join(dir, name)
}

func loadSkills(root *safefile.Root, rel, shown string) ([]Skill, error) {
	entries, err := root.ReadDir(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if _, ok := safefile.Refused(err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("skills folder %s: %w", shown, err)
	}
	var out []Skill
	var errs []error
	for _, e := range entries {
		var file, dirShown, fileShown string
		switch {
		case strings.HasSuffix(e.Name, ".md") && !e.IsDir():
			file = inRoot(rel, e.Name)
			dirShown = shown
			fileShown = filepath.Join(shown, e.Name)
		case e.IsDir() || e.Type&fs.ModeSymlink != 0:
			// A link where a skill's folder would be is read through, so
			// that its refusal is told.
			file = inRoot(rel, e.Name+"/SKILL.md")
			dirShown = filepath.Join(shown, e.Name)
			fileShown = filepath.Join(dirShown, "SKILL.md")
		default:
			continue
		}
		data, err := readResource(root, file, "skill", fileShown)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		meta, body := splitFrontMatter(string(data))
		name := meta["name"]
		if name == "" {
			name = strings.TrimSuffix(e.Name, ".md")
		}
		out = append(out, Skill{Name: name, Description: meta["description"], Location: fileShown, Dir: dirShown, Body: strings.TrimSpace(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

func loadTemplates(root *safefile.Root, rel, shown string) ([]Template, error) {
	entries, err := root.ReadDir(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if _, ok := safefile.Refused(err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("prompts folder %s: %w", shown, err)
	}
	var out []Template
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name, ".md") || e.IsDir() {
			continue
		}
		data, err := readResource(root, inRoot(rel, e.Name), "template", filepath.Join(shown, e.Name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		meta, body := splitFrontMatter(string(data))
		desc := meta["description"]
		if desc == "" {
			for _, line := range strings.Split(body, "\n") {
				if line = strings.TrimSpace(line); line != "" {
					desc = truncateRunes(line, 60)
					break
				}
			}
		}
		out = append(out, Template{Name: strings.TrimSuffix(e.Name, ".md"), Description: desc, Body: body})
	}
	return out, errors.Join(errs...)
}

// splitFrontMatter separates a leading "---" YAML block of simple key: value lines
// from the body.
func splitFrontMatter(s string) (map[string]string, string) {
	meta := map[string]string{}
	s = strings.TrimPrefix(s, "\ufeff")
	norm := strings.ReplaceAll(s, "\r\n", "\n")
	if !strings.HasPrefix(norm, "---\n") {
		return meta, norm
	}
	rest := norm[4:]
	end := strings.Index(rest, "\n---")
	if end < 0 {
		return meta, norm
	}
	for _, line := range strings.Split(rest[:end], "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		meta[strings.TrimSpace(k)] = v
	}
	body := rest[end+4:]
	body = strings.TrimPrefix(body, "\n")
	return meta, body
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

// Expand applies skill expansion (/skill:name args) and then template expansion
// (/name args). Unknown names leave the text unchanged.
func (r Resources) Expand(text string) string {
	return r.expandTemplate(r.expandSkill(text))
}

func (r Resources) expandSkill(text string) string {
	const prefix = "/skill:"
	if !strings.HasPrefix(text, prefix) {
		return text
	}
	name, args, _ := strings.Cut(text[len(prefix):], " ")
	for _, s := range r.Skills {
		if s.Name != name {
			continue
		}
		block := fmt.Sprintf("<skill name=%q location=%q>\nReferences are relative to %s.\n\n%s\n</skill>", s.Name, s.Location, s.Dir, s.Body)
		if args = strings.TrimSpace(args); args != "" {
			return block + "\n\n" + args
		}
		return block
	}
	return text
}

func (r Resources) expandTemplate(text string) string {
	if !strings.HasPrefix(text, "/") {
		return text
	}
	name, args, _ := strings.Cut(text[1:], " ")
	for _, t := range r.Templates {
		if t.Name == name {
			return SubstituteArgs(t.Body, ParseArgs(args))
		}
	}
	return text
}

// SkillsPrompt lists the skills for the system prompt, or "" when there are none.
func (r Resources) SkillsPrompt() string {
	if len(r.Skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nSkills give specialized instructions for particular tasks. When a task matches a skill's description, read its file with the read tool first; paths inside a skill are relative to the skill's folder.\n\n<available_skills>\n")
	for _, s := range r.Skills {
		fmt.Fprintf(&b, "  <skill>\n    <name>%s</name>\n    <description>%s</description>\n    <location>%s</location>\n  </skill>\n",
			xmlEscape(s.Name), xmlEscape(s.Description), xmlEscape(s.Location))
	}
	b.WriteString("</available_skills>")
	return b.String()
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

func xmlEscape(s string) string { return xmlEscaper.Replace(s) }

// ParseArgs splits template arguments like a shell does for plain words and
// single- or double-quoted strings (no escapes, no expansion).
func ParseArgs(s string) []string {
	var args []string
	var cur strings.Builder
	var quote rune
	for _, c := range s {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case c == '"' || c == '\'':
			quote = c
		case c == ' ' || c == '\t':
			if cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(c)
		}
	}
	if cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

var (
	positionalRe = regexp.MustCompile(`\$(\d+)`)
	sliceRe      = regexp.MustCompile(`\$\{@:(\d+)(?::(\d+))?\}`)
)

// SubstituteArgs fills a template body: $1..$N, ${@:N}, ${@:N:L}, $ARGUMENTS and $@.
// Substituted values are not themselves expanded again.
func SubstituteArgs(body string, args []string) string {
	// Each pass only rewrites placeholders of the template itself: values are
	// protected by replacing in one sweep per pattern over the original pieces.
	out := positionalRe.ReplaceAllStringFunc(body, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		if n >= 1 && n <= len(args) {
			return protect(args[n-1])
		}
		return ""
	})
	out = sliceRe.ReplaceAllStringFunc(out, func(m string) string {
		sub := sliceRe.FindStringSubmatch(m)
		start, _ := strconv.Atoi(sub[1])
		start--
		if start < 0 {
			start = 0
		}
		if start > len(args) {
			start = len(args)
		}
		end := len(args)
		if sub[2] != "" {
			l, _ := strconv.Atoi(sub[2])
			end = min(start+l, len(args))
		}
		return protect(strings.Join(args[start:end], " "))
	})
	all := protect(strings.Join(args, " "))
	out = strings.ReplaceAll(out, "$ARGUMENTS", all)
	out = strings.ReplaceAll(out, "$@", all)
	return unprotect(out)
}

// protect hides '$' in substituted values from later passes; unprotect restores it.
// U+E000 is a private-use character that templates do not contain.
func protect(s string) string   { return strings.ReplaceAll(s, "$", "\ue000") }
func unprotect(s string) string { return strings.ReplaceAll(s, "\ue000", "$") }
