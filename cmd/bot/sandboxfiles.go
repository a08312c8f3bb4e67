package main

import "github.com/threadsmith/threadsmith/config"

// dsnSecretFiles are the files a PostgreSQL connection string names that
// hold a secret: the client's private key (sslkey) and a password file
// (passfile). The sandbox hides them wherever they are.
func dsnSecretFiles(dsn string) []string {
	var files []string
	for _, k := range []string{"sslkey", "passfile"} {
		if v := config.DSNParam(dsn, k); v != "" {
			files = append(files, v)
		}
	}
	return files
}
