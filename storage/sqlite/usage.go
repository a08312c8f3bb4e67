package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/threadsmith/threadsmith/storage"
)

// usageColumns sums the usage of the rows of a query whose entries are
// aliased e.
const usageColumns = `count(*),
	coalesce(sum(json_extract(e.payload, '$.usage.input')), 0),
	coalesce(sum(json_extract(e.payload, '$.usage.output')), 0),
	coalesce(sum(json_extract(e.payload, '$.usage.cacheRead')), 0),
	coalesce(sum(json_extract(e.payload, '$.usage.cacheWrite')), 0),
	coalesce(sum(json_extract(e.payload, '$.usage.cost.total')), 0)`

// isReply selects the assistant replies that reported usage.
const isReply = `e.type = 'message' AND json_extract(e.payload, '$.role') = 'assistant'
	AND json_extract(e.payload, '$.usage') IS NOT NULL`

// ThreadUsage implements storage.Store.
func (db *DB) ThreadUsage(ctx context.Context, threadID int64) (storage.Usage, error) {
	return db.usage(ctx, "thread usage", `SELECT `+usageColumns+`
		FROM entries e JOIN sessions s ON s.id = e.session_id
		WHERE s.thread_id = ? AND `+isReply, threadID)
}

// UserUsage implements storage.Store.
func (db *DB) UserUsage(ctx context.Context, platform, authorID string) (storage.Usage, error) {
	return db.usage(ctx, "user usage", `WITH owned AS (
		SELECT e.payload AS payload, (
			SELECT CAST(json_extract(u.payload, '$.inputId') AS INTEGER) FROM entries u
			WHERE u.session_id = e.session_id AND u.type = 'message' AND u.seq < e.seq
				AND json_extract(u.payload, '$.role') = 'user' AND json_extract(u.payload, '$.inputId') IS NOT NULL
			ORDER BY u.seq DESC LIMIT 1) AS input_id
		FROM entries e WHERE `+isReply+`)
		SELECT `+usageColumns+` FROM owned e JOIN inbound i ON i.id = e.input_id
		WHERE i.platform = ? AND i.author_id = ?`, platform, authorID)
}

func (db *DB) usage(ctx context.Context, op, query string, args ...any) (storage.Usage, error) {
	var u storage.Usage
	var cost sql.NullFloat64
	err := db.r.QueryRowContext(ctx, query, args...).Scan(&u.Replies, &u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &cost)
	if err != nil {
		return storage.Usage{}, fmt.Errorf("%s: %w", op, err)
	}
	u.Cost = cost.Float64
	return u, nil
}
