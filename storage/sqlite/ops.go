package sqlite

import "context"

// Ping implements storage.Store.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return opError("ping", db.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one))
}

// PendingInboundCounts implements storage.Store, reading the inbound_pending
// index only.
func (db *DB) PendingInboundCounts(ctx context.Context) (map[string]int, error) {
	const op = "pending inbound counts"
	rows, err := db.r.QueryContext(ctx, `SELECT state, count(*) FROM inbound WHERE state IN ('received', 'queued') GROUP BY state`)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return nil, opError(op, err)
		}
		out[state] = n
	}
	return out, opError(op, rows.Err())
}
