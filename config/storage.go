package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// StorageDriver names the database backend.
type StorageDriver string

const (
	// StorageSQLite is the embedded default: <data_dir>/threadsmith.db, one
	// bot per data_dir.
	StorageSQLite StorageDriver = "sqlite"
	// StoragePostgres is a PostgreSQL database at storage.dsn, which several
	// replicas may share.
	StoragePostgres StorageDriver = "postgres"
)

// Storage says where the bot keeps its state.
type Storage struct {
	Driver StorageDriver `yaml:"driver"`
	// DSN is the PostgreSQL connection string (postgres://user:pass@host/db
	// or key=value), a secret: redacted from logs, ${ENV} expanded. Only
	// with driver postgres.
	DSN   string       `yaml:"dsn"`
	Lease StorageLease `yaml:"lease"`
	// Retention deletes the threads nobody used for this long — their
	// records, workspace and scratch files — at start and then daily. 0
	// (the default) keeps everything.
	Retention Days `yaml:"retention"`
}

// MinRetention is the shortest storage.retention: a thread idle for less may
// still be followed up on.
const MinRetention = 24 * time.Hour

// StorageLease times thread leases: a replica owns a thread while its lease
// is live and renews it every Renew; another replica may take the thread
// over once TTL passed without a renewal.
type StorageLease struct {
	TTL   time.Duration `yaml:"ttl"`
	Renew time.Duration `yaml:"renew"`
}

// Default lease timings: renewed every third of the TTL.
const (
	DefaultLeaseTTL   = 30 * time.Second
	DefaultLeaseRenew = 10 * time.Second
)

func defaultStorage() Storage {
	return Storage{Driver: StorageSQLite, Lease: StorageLease{TTL: DefaultLeaseTTL, Renew: DefaultLeaseRenew}}
}

func (c *Config) validateStorage(v *collector) {
	s := c.Storage
	switch s.Driver {
	case StorageSQLite:
		if s.DSN != "" {
			v.add("storage.dsn", "is for driver postgres; SQLite keeps its file in data_dir (remove storage.dsn or set storage.driver: postgres)")
		}
	case StoragePostgres:
		if strings.TrimSpace(s.DSN) == "" {
			v.add("storage.dsn", "is required with driver postgres (postgres://user:password@host:5432/threadsmith)")
		}
	default:
		v.add("storage.driver", fmt.Sprintf("must be sqlite or postgres (got %q)", s.Driver))
	}
	if r := time.Duration(s.Retention); r < 0 || (r > 0 && r < MinRetention) {
		v.add("storage.retention", fmt.Sprintf("must be at least 1d (got %s); 0 keeps every thread", s.Retention))
	}
	positiveDuration(v, "storage.lease.ttl", s.Lease.TTL)
	positiveDuration(v, "storage.lease.renew", s.Lease.Renew)
	if s.Lease.Renew > 0 && s.Lease.Renew >= s.Lease.TTL {
		v.add("storage.lease.renew", fmt.Sprintf("must be shorter than storage.lease.ttl (got %s, ttl %s)", s.Lease.Renew, s.Lease.TTL))
	}
}

// redactDSN hides a connection string's password: a URL keeps its user,
// host and database; anything else (key=value, or a URL with parameters
// that could carry one) is replaced whole.
func redactDSN(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.RawQuery != "" && strings.Contains(strings.ToLower(u.RawQuery), "pass") {
		return redactedValue
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
		return strings.Replace(u.String(), ":REDACTED@", ":"+redactedValue+"@", 1)
	}
	return u.String()
}

// DSNPassword returns the password a PostgreSQL connection string carries,
// "" if none, so it can be redacted wherever text is shown.
func DSNPassword(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if p, ok := u.User.Password(); ok {
			return p
		}
	}
	return DSNParam(dsn, "password")
}

// DSNParam returns the value of a PostgreSQL connection string's parameter
// key ("sslkey", "passfile"), "" if it has none: a URL's query parameter,
// else a libpq key=value pair (the last one counts, as for libpq).
func DSNParam(dsn, key string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return u.Query().Get(key)
	}
	value := ""
	for s := strings.TrimLeft(dsn, " \t\n\r\f\v"); s != ""; s = strings.TrimLeft(s, " \t\n\r\f\v") {
		var k, v string
		var ok bool
		if k, v, s, ok = nextKeyValue(s); !ok {
			break
		}
		if k == key {
			value = v
		}
	}
	return value
}

// nextKeyValue reads one keyword = value pair of a libpq key=value string
// off s: spaces around '=' are allowed, a value is 'quoted' or runs to the
// next space, and a backslash escapes the next character in either.
func nextKeyValue(s string) (key, value, rest string, ok bool) {
	i := strings.IndexAny(s, "= \t\n\r\f\v")
	if i <= 0 {
		return "", "", "", false
	}
	key, s = s[:i], strings.TrimLeft(s[i:], " \t\n\r\f\v")
	if !strings.HasPrefix(s, "=") {
		return "", "", "", false
	}
	s = strings.TrimLeft(s[1:], " \t\n\r\f\v")
	quoted := strings.HasPrefix(s, "'")
	if quoted {
		s = s[1:]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case quoted && c == '\'':
			return key, b.String(), s[i+1:], true
		case !quoted && strings.IndexByte(" \t\n\r\f\v", c) >= 0:
			return key, b.String(), s[i:], true
		default:
			b.WriteByte(c)
		}
	}
	return key, b.String(), "", true
}
