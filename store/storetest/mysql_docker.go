//go:build testcontainers

package storetest

import (
	"context"
	"fmt"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcmysql "github.com/testcontainers/testcontainers-go/modules/mysql"
)

// mysqlImage is the image started when no server is named; the module's
// readiness check waits for MySQL's own log line, so it must be MySQL.
const mysqlImage = "mysql:8.4"

// mysqlInDocker starts a MySQL container when a Docker engine answers, and
// returns its DSN, or why the MySQL tests skip.
func mysqlInDocker() (dsn, skip string, err error) {
	if !dockerAnswers() {
		return "", DSNEnv + " not set and no Docker engine: skipping MySQL tests", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := tcmysql.Run(ctx, mysqlImage,
		tcmysql.WithUsername("root"), tcmysql.WithPassword("idalloc"), tcmysql.WithDatabase("test"))
	if err != nil {
		return "", "", fmt.Errorf("start %s container: %w", mysqlImage, err)
	}
	dsn, err = c.ConnectionString(ctx)
	return dsn, "", err
}

// dockerAnswers reports whether a Docker engine is reachable, within a few
// seconds.
func dockerAnswers() (ok bool) {
	// testcontainers panics rather than erring when it finds no Docker host.
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return false
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Health(ctx) == nil
}
