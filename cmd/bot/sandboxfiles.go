package main

import (
	"os"

	"github.com/threadsmith/threadsmith/config"
)

// dsnSecretFiles are the files that hold a PostgreSQL secret: the client's
// private key and a password file, named by the connection string (sslkey,
// passfile) or by the PGSSLKEY and PGPASSFILE variables, which pgx reads
// when the string does not name them. The sandbox hides them wherever they
// are.
func dsnSecretFiles(dsn string) []string {
	var files []string
	for _, k := range []struct{ param, env string }{{"sslkey", "PGSSLKEY"}, {"passfile", "PGPASSFILE"}} {
		for _, v := range []string{config.DSNParam(dsn, k.param), os.Getenv(k.env)} {
			if v != "" {
				files = append(files, v)
			}
		}
	}
	return files
}
