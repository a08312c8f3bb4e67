package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// recordRunUsage sums the run's replies (runSpanOf) and stores them in
// run_usage with the last entry of its span. Called in the transaction that
// ends the run; a run recorded already keeps its record.
func recordRunUsage(ctx context.Context, tx *sql.Tx, runID int64) error {
	sp, err := runSpanOf(ctx, tx, runID)
	if err != nil {
		return err
	}
	u, err := sp.replies(ctx, tx)
	if err != nil {
		return err
	}
	last := sp.after
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), ?) FROM entries WHERE session_id = ? AND seq <= ?`,
		sp.after, sp.sid, sp.upto).Scan(&last); err != nil {
		return err
	}
	models, _ := json.Marshal(append([]string{}, u.Models...))
	_, err = tx.ExecContext(ctx, `INSERT INTO run_usage (run_id, last_seq, replies, input_tokens, output_tokens,
		cache_read_tokens, cache_write_tokens, cost, models) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
		runID, last, u.Replies, u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Cost, string(models))
	return err
}

// runSpan is the entries of session sid a run's replies are counted from:
// seq in (after, upto].
type runSpan struct{ sid, after, upto int64 }

// runSpanOf finds the run's span: the entries of its session written since
// the previous run of that session ended (and not before the user message of
// the run's own input), and before the input of a later run of the session
// (a run stays open while its work is pushed, and the next one may start and
// end meanwhile).
func runSpanOf(ctx context.Context, q querier, runID int64) (runSpan, error) {
	var sp runSpan
	var inbound int64
	err := q.QueryRowContext(ctx, `SELECT r.session_id, coalesce(r.inbound_id, 0),
		(SELECT coalesce(max(u.last_seq), -1) FROM run_usage u JOIN runs p ON p.id = u.run_id
			WHERE p.session_id = r.session_id AND p.id < r.id)
		FROM runs r WHERE r.id = ?`, runID).Scan(&sp.sid, &inbound, &sp.after)
	if err != nil {
		return sp, fmt.Errorf("run %d: %w", runID, err)
	}
	if inbound != 0 {
		// A previous run without a run_usage record leaves no bound: the
		// run's own input is one.
		// Only a message after the bound can move it: the entries before it
		// (a long session's whole history) are not read.
		var first sql.NullInt64
		err = q.QueryRowContext(ctx, `SELECT min(seq) FROM entries WHERE session_id = ? AND seq > ? AND type = 'message'
			AND json_extract(payload, '$.role') = 'user' AND json_extract(payload, '$.inputId') = ?`,
			sp.sid, sp.after, strconv.FormatInt(inbound, 10)).Scan(&first)
		if err != nil {
			return sp, err
		}
		if first.Valid && first.Int64-1 > sp.after {
			sp.after = first.Int64 - 1
		}
	}
	// The next run's input starts its entries.
	sp.upto = math.MaxInt64
	var next sql.NullInt64
	err = q.QueryRowContext(ctx, `SELECT min(seq) FROM entries WHERE session_id = ? AND seq > ? AND type = 'message'
		AND json_extract(payload, '$.role') = 'user' AND json_extract(payload, '$.inputId') IN
			(SELECT CAST(inbound_id AS TEXT) FROM runs WHERE session_id = ? AND id > ? AND inbound_id IS NOT NULL)`,
		sp.sid, sp.after, sp.sid, runID).Scan(&next)
	if err != nil {
		return sp, err
	}
	if next.Valid {
		sp.upto = next.Int64 - 1
	}
	return sp, nil
}

// replies sums the replies in the span.
func (sp runSpan) replies(ctx context.Context, q querier) (u storage.RunUsage, err error) {
	rows, err := q.QueryContext(ctx, `SELECT coalesce(json_extract(payload, '$.model'), ''),
		coalesce(json_extract(payload, '$.usage.input'), 0), coalesce(json_extract(payload, '$.usage.output'), 0),
		coalesce(json_extract(payload, '$.usage.cacheRead'), 0), coalesce(json_extract(payload, '$.usage.cacheWrite'), 0),
		coalesce(json_extract(payload, '$.usage.cost.total'), 0)
		FROM entries WHERE session_id = ? AND seq > ? AND seq <= ? AND type = 'message'
			AND json_extract(payload, '$.role') = 'assistant' AND json_extract(payload, '$.usage') IS NOT NULL
		ORDER BY seq`, sp.sid, sp.after, sp.upto)
	if err != nil {
		return u, err
	}
	defer rows.Close()
	for rows.Next() {
		var in, out, cr, cw int64
		var model string
		var cost float64
		if err := rows.Scan(&model, &in, &out, &cr, &cw, &cost); err != nil {
			return u, err
		}
		backend.AddReply(&u, model, in, out, cr, cw, cost)
	}
	return u, rows.Err()
}

// AuthorSpend implements storage.Store: the ended runs' records and the
// running runs' replies, read in one transaction.
func (db *DB) AuthorSpend(ctx context.Context, platform, authorID string, since time.Time) (storage.Usage, error) {
	return db.spend(ctx, "author spend", authorRuns, []any{platform, authorID}, authorEnded, since.UnixMilli())
}

// authorRuns and authorEnded select a person's runs, and those that ended
// since a time, for AuthorSpend (args: platform, author id; since in Unix ms).
const (
	authorRuns = `FROM runs r JOIN inbound i ON i.id = r.inbound_id
		WHERE i.platform = ? AND i.author_id = ? AND `
	authorEnded = `r.ended_at >= ?`
)

// ThreadSpend implements storage.Store, as AuthorSpend does.
func (db *DB) ThreadSpend(ctx context.Context, threadID int64) (storage.Usage, error) {
	return db.spend(ctx, "thread spend", `FROM runs r WHERE r.thread_id = ? AND `, []any{threadID}, `r.ended_at IS NOT NULL`)
}

// spend sums the runs that from (a FROM clause and the start of a WHERE
// that ends with AND, with its args) selects: those ended, as ended selects
// them, by their run_usage records, and those running by their replies
// stored so far, in one read transaction.
func (db *DB) spend(ctx context.Context, op, from string, args []any, ended string, endedArgs ...any) (storage.Usage, error) {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return storage.Usage{}, opError(op, err)
	}
	defer tx.Rollback()
	var u storage.Usage
	err = tx.QueryRowContext(ctx, endedUsageQuery(from, ended), append(slices.Clone(args), endedArgs...)...).
		Scan(&u.Replies, &u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.Cost)
	if err != nil {
		return storage.Usage{}, opError(op, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT r.id `+from+`r.ended_at IS NULL`, args...)
	if err != nil {
		return storage.Usage{}, opError(op, err)
	}
	var running []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return storage.Usage{}, opError(op, err)
		}
		running = append(running, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return storage.Usage{}, opError(op, err)
	}
	for _, id := range running {
		sp, err := runSpanOf(ctx, tx, id)
		if err != nil {
			return storage.Usage{}, opError(op, err)
		}
		r, err := sp.replies(ctx, tx)
		if err != nil {
			return storage.Usage{}, opError(op, err)
		}
		u = u.Plus(r.Usage)
	}
	return u, nil
}

// endedUsageQuery sums the run_usage records of the runs from and ended
// select (as spend takes them).
func endedUsageQuery(from, ended string) string {
	return `SELECT coalesce(sum(u.replies), 0), coalesce(sum(u.input_tokens), 0),
		coalesce(sum(u.output_tokens), 0), coalesce(sum(u.cache_read_tokens), 0), coalesce(sum(u.cache_write_tokens), 0),
		coalesce(sum(u.cost), 0)
		FROM run_usage u WHERE u.run_id IN (SELECT r.id ` + from + ended + `)`
}

// ThreadRunUsage implements storage.Store.
func (db *DB) ThreadRunUsage(ctx context.Context, threadID int64) (map[int64]storage.RunUsage, error) {
	const op = "thread run usage"
	rows, err := db.r.QueryContext(ctx, `SELECT u.run_id, u.replies, u.input_tokens, u.output_tokens,
		u.cache_read_tokens, u.cache_write_tokens, u.cost, u.models
		FROM run_usage u JOIN runs r ON r.id = u.run_id WHERE r.thread_id = ?`, threadID)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	out := map[int64]storage.RunUsage{}
	for rows.Next() {
		var id int64
		var u storage.RunUsage
		var models string
		if err := rows.Scan(&id, &u.Replies, &u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.Cost, &models); err != nil {
			return nil, opError(op, err)
		}
		if err := json.Unmarshal([]byte(models), &u.Models); err != nil {
			return nil, opError(op, fmt.Errorf("run %d models: %w", id, err))
		}
		out[id] = u
	}
	return out, opError(op, rows.Err())
}

// RunUsageOf implements storage.Store.
func (db *DB) RunUsageOf(ctx context.Context, runID int64) (storage.RunUsage, error) {
	var u storage.RunUsage
	var models string
	err := db.r.QueryRowContext(ctx, `SELECT replies, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, models
		FROM run_usage WHERE run_id = ?`, runID).Scan(&u.Replies, &u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.Cost, &models)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.RunUsage{}, opError("run usage", fmt.Errorf("run %d: %w", runID, storage.ErrNotFound))
	}
	if err == nil {
		err = json.Unmarshal([]byte(models), &u.Models)
	}
	return u, opError("run usage", err)
}
