package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// recordRunUsage sums the run's replies (runSpanOf) into run_usage with the
// last entry of its span, in the transaction that ends the run, as the
// SQLite store does. A run recorded already keeps its record.
func recordRunUsage(ctx context.Context, tx pgx.Tx, runID int64) error {
	sp, err := runSpanOf(ctx, tx, runID)
	if err != nil {
		return err
	}
	u, err := sp.replies(ctx, tx)
	if err != nil {
		return err
	}
	last := sp.after
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), $1) FROM entries WHERE session_id = $2 AND seq <= $3`,
		sp.after, sp.sid, sp.upto).Scan(&last); err != nil {
		return err
	}
	models, _ := json.Marshal(append([]string{}, u.Models...))
	_, err = tx.Exec(ctx, `INSERT INTO run_usage (run_id, last_seq, replies, input_tokens, output_tokens,
		cache_read_tokens, cache_write_tokens, cost, models) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (run_id) DO NOTHING`,
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
func runSpanOf(ctx context.Context, tx q, runID int64) (runSpan, error) {
	var sp runSpan
	var inbound int64
	if err := tx.QueryRow(ctx, `SELECT r.session_id, coalesce(r.inbound_id, 0),
		(SELECT coalesce(max(u.last_seq), -1) FROM run_usage u JOIN runs p ON p.id = u.run_id
			WHERE p.session_id = r.session_id AND p.id < r.id)
		FROM runs r WHERE r.id = $1`, runID).Scan(&sp.sid, &inbound, &sp.after); err != nil {
		return sp, fmt.Errorf("run %d: %w", runID, err)
	}
	if inbound != 0 {
		var first *int64
		if err := tx.QueryRow(ctx, `SELECT min(seq) FROM entries WHERE session_id = $1 AND seq > $3 AND type = 'message'
			AND payload ->> 'role' = 'user' AND payload ->> 'inputId' = $2`, sp.sid, strconv.FormatInt(inbound, 10), sp.after).Scan(&first); err != nil {
			return sp, err
		}
		if first != nil && *first-1 > sp.after {
			sp.after = *first - 1
		}
	}
	// The next run's input starts its entries.
	sp.upto = math.MaxInt64
	var next *int64
	if err := tx.QueryRow(ctx, `SELECT min(seq) FROM entries WHERE session_id = $1 AND seq > $2 AND type = 'message'
		AND payload ->> 'role' = 'user' AND payload ->> 'inputId' IN
			(SELECT inbound_id::text FROM runs WHERE session_id = $1 AND id > $3 AND inbound_id IS NOT NULL)`,
		sp.sid, sp.after, runID).Scan(&next); err != nil {
		return sp, err
	}
	if next != nil {
		sp.upto = *next - 1
	}
	return sp, nil
}

// replies sums the replies in the span.
func (sp runSpan) replies(ctx context.Context, tx q) (u storage.RunUsage, err error) {
	rows, err := tx.Query(ctx, `SELECT coalesce(payload ->> 'model', ''),
		coalesce((payload -> 'usage' ->> 'input')::bigint, 0), coalesce((payload -> 'usage' ->> 'output')::bigint, 0),
		coalesce((payload -> 'usage' ->> 'cacheRead')::bigint, 0), coalesce((payload -> 'usage' ->> 'cacheWrite')::bigint, 0),
		coalesce((payload -> 'usage' -> 'cost' ->> 'total')::float8, 0)
		FROM entries e WHERE session_id = $1 AND seq > $2 AND seq <= $3 AND `+isReply+`
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

// AuthorSpend implements storage.SpendStore: the ended runs' records and the
// running runs' replies, read in one snapshot.
func (db *DB) AuthorSpend(ctx context.Context, platform, authorID string, since time.Time) (storage.Usage, error) {
	return db.spend(ctx, "author spend", `FROM runs r JOIN inbound i ON i.id = r.inbound_id
		WHERE i.platform = $1 AND i.author_id = $2 AND `, []any{platform, authorID}, `r.ended_at >= $3`, since.UnixMilli())
}

// ThreadSpend implements storage.SpendStore, as AuthorSpend does.
func (db *DB) ThreadSpend(ctx context.Context, threadID int64) (storage.Usage, error) {
	return db.spend(ctx, "thread spend", `FROM runs r WHERE r.thread_id = $1 AND `, []any{threadID}, `r.ended_at IS NOT NULL`)
}

// spend sums the runs that from (a FROM clause and the start of a WHERE
// that ends with AND, with its args) selects: those ended, as ended selects
// them, by their run_usage records, and those running by their replies
// stored so far, in one snapshot.
func (db *DB) spend(ctx context.Context, op, from string, args []any, ended string, endedArgs ...any) (storage.Usage, error) {
	if db.closed.Load() {
		return storage.Usage{}, opError(op, storage.ErrClosed)
	}
	var u storage.Usage
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		u = storage.Usage{}
		err := tx.QueryRow(ctx, `SELECT coalesce(sum(u.replies), 0), coalesce(sum(u.input_tokens), 0),
			coalesce(sum(u.output_tokens), 0), coalesce(sum(u.cache_read_tokens), 0), coalesce(sum(u.cache_write_tokens), 0),
			coalesce(sum(u.cost), 0)
			FROM run_usage u WHERE u.run_id IN (SELECT r.id `+from+ended+`)`, append(slices.Clone(args), endedArgs...)...).
			Scan(&u.Replies, &u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.Cost)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT r.id `+from+`r.ended_at IS NULL`, args...)
		if err != nil {
			return err
		}
		running, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		for _, id := range running {
			sp, err := runSpanOf(ctx, tx, id)
			if err != nil {
				return err
			}
			r, err := sp.replies(ctx, tx)
			if err != nil {
				return err
			}
			u = u.Plus(r.Usage)
		}
		return nil
	})
	return u, opError(op, err)
}

// ThreadRunUsage implements storage.RunUsageStore.
func (db *DB) ThreadRunUsage(ctx context.Context, threadID int64) (map[int64]storage.RunUsage, error) {
	type row struct {
		id int64
		u  storage.RunUsage
	}
	rows, err := queryAll(ctx, db, "thread run usage", func(r pgx.Row) (row, error) {
		var x row
		var models string
		if err := r.Scan(&x.id, &x.u.Replies, &x.u.Input, &x.u.Output, &x.u.CacheRead, &x.u.CacheWrite, &x.u.Cost, &models); err != nil {
			return x, err
		}
		if err := json.Unmarshal([]byte(models), &x.u.Models); err != nil {
			return x, fmt.Errorf("run %d models: %w", x.id, err)
		}
		return x, nil
	}, `SELECT u.run_id, u.replies, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cost, u.models
		FROM run_usage u JOIN runs r ON r.id = u.run_id WHERE r.thread_id = $1`, threadID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]storage.RunUsage, len(rows))
	for _, x := range rows {
		out[x.id] = x.u
	}
	return out, nil
}

// RunUsageOf implements storage.RunUsageStore.
func (db *DB) RunUsageOf(ctx context.Context, runID int64) (storage.RunUsage, error) {
	r, err := db.reader()
	if err != nil {
		return storage.RunUsage{}, opError("run usage", err)
	}
	var u storage.RunUsage
	var models string
	err = r.QueryRow(ctx, `SELECT replies, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, models
		FROM run_usage WHERE run_id = $1`, runID).Scan(&u.Replies, &u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.Cost, &models)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.RunUsage{}, opError("run usage", fmt.Errorf("run %d: %w", runID, storage.ErrNotFound))
	}
	if err == nil {
		err = json.Unmarshal([]byte(models), &u.Models)
	}
	return u, opError("run usage", err)
}
