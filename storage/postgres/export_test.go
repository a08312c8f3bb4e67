package postgres

import "context"

// Setting reads a run-time parameter of one of db's pooled connections.
func Setting(ctx context.Context, db *DB, name string) (string, error) {
	var v string
	err := db.pool.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// IdleBackendPIDs returns the server process ids of db's idle pooled
// connections (it holds them all for a moment).
func IdleBackendPIDs(ctx context.Context, db *DB) []uint32 {
	conns := db.pool.AcquireAllIdle(ctx)
	pids := make([]uint32, 0, len(conns))
	for _, c := range conns {
		pids = append(pids, c.Conn().PgConn().PID())
		c.Release()
	}
	return pids
}

// ReadLiveRows runs LoadLiveEntries' statement and reads its rows without
// decoding them: the server's and the connection's share of a resume. It
// returns the payload bytes read.
func ReadLiveRows(ctx context.Context, db *DB, sessionID string) (int, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	rows, err := db.pool.Query(ctx, loadLiveQuery, sid)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n += len(rows.RawValues()[3])
	}
	return n, rows.Err()
}

// RoundTrip runs the smallest statement: one round trip to the server.
func RoundTrip(ctx context.Context, db *DB) error {
	var one int
	return db.pool.QueryRow(ctx, `SELECT 1`).Scan(&one)
}
