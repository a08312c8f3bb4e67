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
