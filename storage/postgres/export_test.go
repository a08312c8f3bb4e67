package postgres

import "context"

// Setting reads a run-time parameter of one of db's pooled connections.
func Setting(ctx context.Context, db *DB, name string) (string, error) {
	var v string
	err := db.pool.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}
