package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestStorageDefaultsToSQLite(t *testing.T) {
	c := mustParse(t, "", nil)
	if c.Storage.Driver != StorageSQLite || c.Storage.DSN != "" || c.Storage.Lease.TTL != DefaultLeaseTTL || c.Storage.Lease.Renew != DefaultLeaseRenew {
		t.Errorf("storage = %+v, want sqlite without a DSN and the default lease", c.Storage)
	}
}

func TestStoragePostgresDSNFromTheEnvironment(t *testing.T) {
	c := mustParse(t, "storage:\n  driver: postgres\n  dsn: postgres://bot:${PGPASSWORD}@db:5432/ts\n  lease: {ttl: 1m, renew: 20s}\n",
		map[string]string{"PGPASSWORD": "pw-SECRET"})
	if c.Storage.DSN != "postgres://bot:pw-SECRET@db:5432/ts" || c.Storage.Lease.TTL != time.Minute || c.Storage.Lease.Renew != 20*time.Second {
		t.Errorf("storage = %+v", c.Storage)
	}
	c.LLM.APIKey, c.Slack.BotToken, c.Slack.AppToken = "sk-x", "xoxb-x", "xapp-x"
	noErrUnder(t, c.Validate(), "storage")
	r := c.Redacted()
	if strings.Contains(fmt.Sprintf("%+v", r), "SECRET") || !strings.Contains(r.Storage.DSN, "db:5432/ts") {
		t.Errorf("redacted DSN = %q, want the host and database without the password", r.Storage.DSN)
	}
	if got := DSNPassword(c.Storage.DSN); got != "pw-SECRET" {
		t.Errorf("DSNPassword = %q", got)
	}
}

func TestStorageValidation(t *testing.T) {
	for _, tc := range []struct {
		yaml, key, want string
	}{
		{"storage: {driver: mysql}", "storage.driver", "sqlite or postgres"},
		{"storage: {driver: postgres}", "storage.dsn", "required"},
		{"storage: {dsn: postgres://db/ts}", "storage.dsn", "driver postgres"},
		{"storage: {lease: {ttl: 10s, renew: 10s}}", "storage.lease.renew", "shorter"},
		{"storage: {lease: {ttl: 0s}}", "storage.lease.ttl", ""},
	} {
		c := mustParse(t, tc.yaml, nil)
		wantErr(t, c.Validate(), tc.key, tc.want)
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "",
		"postgres://bot@db/ts": "postgres://bot@db/ts",
		"postgres://bot:SECRET@db/ts?sslmode=require": "postgres://bot:***@db/ts?sslmode=require",
		"postgres://bot@db/ts?password=SECRET":        "***",
		"host=db user=bot password=SECRET":            "***",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"postgres://bot@db/ts?password=SECRET": "SECRET",
		"host=db user=bot password='SECRET'":   "SECRET",
		"postgres://bot@db/ts":                 "",
		// libpq's key=value syntax: spaces around '=', quoted values with
		// spaces, backslash escapes, the last of several.
		"host=db password = SECRET user=bot":     "SECRET",
		"host=db password='two words' user=bot":  "two words",
		`host=db password='it\'s' user=bot`:      "it's",
		`host=db password=back\ slash user=bot`:  "back slash",
		"password=first host=db password=SECRET": "SECRET",
		"host=db user=bot":                       "",
	} {
		if got := DSNPassword(in); got != want {
			t.Errorf("DSNPassword(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStorageRetention(t *testing.T) {
	if c := mustParse(t, "", nil); c.Storage.Retention != 0 {
		t.Errorf("default retention = %s, want 0 (off)", c.Storage.Retention)
	}
	for src, want := range map[string]time.Duration{
		"storage: {retention: 90d}":   90 * 24 * time.Hour,
		"storage: {retention: 2160h}": 90 * 24 * time.Hour,
		"storage: {retention: 0}":     0,
	} {
		c := mustParse(t, src, nil)
		if time.Duration(c.Storage.Retention) != want {
			t.Errorf("%s: retention = %s, want %s", src, c.Storage.Retention, want)
		}
		noErrUnder(t, c.Validate(), "storage")
	}
	if got := Days(90 * 24 * time.Hour).String(); got != "90d" {
		t.Errorf("String = %q, want 90d", got)
	}
	_, err := parseString("storage:\n  retention: 90days\n", nil)
	wantErr(t, err, "storage.retention", "number of days such as 90d", "line 2")
	for _, src := range []string{"storage: {retention: 2h}", "storage: {retention: -5h}"} {
		c := mustParse(t, src, nil)
		wantErr(t, c.Validate(), "storage.retention", "at least 1d", "0 keeps every thread")
	}
}
