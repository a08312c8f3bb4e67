package main

import (
	"net/url"
	"regexp"
	"strings"
)

// dsnSecretFiles are the files a PostgreSQL connection string names that
// hold a secret: the client's private key (sslkey) and a password file
// (passfile). The sandbox hides them wherever they are.
func dsnSecretFiles(dsn string) []string {
	var files []string
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		for _, k := range []string{"sslkey", "passfile"} {
			if v := q.Get(k); v != "" {
				files = append(files, v)
			}
		}
		return files
	}
	for _, m := range dsnFileParam.FindAllStringSubmatch(dsn, -1) {
		v := m[2]
		if strings.HasPrefix(v, "'") {
			v = v[1 : len(v)-1]
		}
		files = append(files, backslashEscape.ReplaceAllString(v, "$1"))
	}
	return files
}

var (
	// dsnFileParam is sslkey= or passfile= in a libpq key=value string, its
	// value 'quoted' or running to the next space.
	dsnFileParam    = regexp.MustCompile(`(?:^|\s)(sslkey|passfile)\s*=\s*('(?:[^'\\]|\\.)*'|(?:[^\s'\\]|\\.)+)`)
	backslashEscape = regexp.MustCompile(`\\(.)`)
)
