// Package threadsmith_test checks the repository's documentation against the
// tree: the README's Layout table names every package, and every relative
// link of the README and docs/ leads to a file of the repository.
package threadsmith_test

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packages returns the folders that hold Go files, as slash paths from the
// root ("." for the root), skipping what go ignores: testdata and folders
// whose name starts with "." or "_".
func packages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			seen[filepath.ToSlash(filepath.Dir(p))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	return pkgs
}

// layoutRows returns the paths the README's Layout table names, each as
// written: a path ending in "/…" stands for everything below it.
func layoutRows(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal(`README.md has no "## Layout" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	code := regexp.MustCompile("`([^`]+)`")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			rows = append(rows, m[1])
		}
	}
	if len(rows) == 0 {
		t.Fatal("the Layout table names no path")
	}
	return rows
}

func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	rows := layoutRows(t)
	covered := func(pkg string) bool {
		for _, r := range rows {
			if prefix, ok := strings.CutSuffix(r, "/…"); ok && strings.HasPrefix(pkg, prefix+"/") || r == pkg {
				return true
			}
		}
		return false
	}
	for _, pkg := range packages(t) {
		if !covered(pkg) {
			t.Errorf("package %s is missing from the README's Layout table", pkg)
		}
	}
	for _, r := range rows {
		dir := strings.TrimSuffix(r, "/…")
		if fi, err := os.Stat(filepath.FromSlash(dir)); err != nil || !fi.IsDir() {
			t.Errorf("the README's Layout table names %s, which is no folder of the repository", r)
		}
	}
}

// A relative link in the README or docs/ names a file of the repository.
func TestDocLinksStayInTheRepository(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range append([]string{"README.md", "BENCHMARKS.md"}, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := path.Join(path.Dir(filepath.ToSlash(doc)), target)
			if strings.HasPrefix(p, "../") {
				t.Errorf("%s links %s, outside the repository", doc, m[1])
				continue
			}
			if _, err := os.Stat(filepath.FromSlash(p)); err != nil {
				t.Errorf("%s links %s: %v", doc, m[1], err)
			}
		}
	}
}

// The code refers to the docs by file and section (docs/behaviour.md §4):
// each reference names a file of docs/ and a section it has, and nothing
// names a design file the repository does not hold.
func TestCodeRefersToDocsThatExist(t *testing.T) {
	ref := regexp.MustCompile(`docs/([A-Za-z0-9_-]+\.md)(?: §(\d+))?`)
	outside := regexp.MustCompile(`\b(PRODUCT|AGENT|DESIGN|SPEC)\.md\b`)
	sections := map[string]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || p == "docs_test.go" {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range outside.FindAll(src, -1) {
			t.Errorf("%s names %s, which is not in the repository", p, m)
		}
		for _, m := range ref.FindAllStringSubmatch(string(src), -1) {
			doc, ok := sections[m[1]]
			if !ok {
				b, err := os.ReadFile(filepath.Join("docs", m[1]))
				if err != nil {
					t.Errorf("%s refers to %s: %v", p, m[0], err)
				}
				doc = string(b)
				sections[m[1]] = doc
			}
			if m[2] != "" && !strings.Contains(doc, "\n## §"+m[2]+" ") {
				t.Errorf("%s refers to %s: docs/%s has no section §%s", p, m[0], m[1], m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
