package postgres_test

import (
	"context"

	"github.com/jackc/pgx/v5"
)

func postgresConn(ctx context.Context, dsn string) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }
