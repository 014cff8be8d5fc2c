package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jmoiron/sqlx"
)

// ErrOutdatedSchema means a MySQL table of idalloc was created by an older
// schema.sql and must be altered before the store can run on it; the
// wrapping error names the statement that does it.
var ErrOutdatedSchema = errors.New("outdated schema")

// ErrMissingTables is OpenMySQL's and OpenPostgres's error, without
// InitSchema, for a database that lacks some of idalloc's tables (an empty
// one, most often); the wrapping error names them and the two ways to
// create them. CheckLayout wraps it too when worker_layouts is missing.
var ErrMissingTables = errors.New("idalloc's tables are missing")

// schemaTables are the tables schema.sql creates, read from it so that a
// table added there is checked here too.
var schemaTables = func() []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?i)CREATE TABLE IF NOT EXISTS (\w+)`).FindAllStringSubmatch(schemaMySQL, -1) {
		names = append(names, m[1])
	}
	return names
}()

// missingTables lists the tables of schemaTables the database lacks.
func (d *db) missingTables(ctx context.Context, q sqlx.QueryerContext) ([]string, error) {
	var missing []string
	for _, t := range schemaTables {
		var n int
		if err := sqlx.GetContext(ctx, q, &n, d.q(d.dialect.tableExists), t); err != nil {
			return nil, err
		}
		if n == 0 {
			missing = append(missing, t)
		}
	}
	return missing, nil
}

// missingTablesError is ErrMissingTables naming the tables and the two ways to
// create them.
func (d *db) missingTablesError(names []string) error {
	return fmt.Errorf("%w: %s; create them by starting once with -init-schema, or by applying %s",
		ErrMissingTables, strings.Join(names, ", "), d.dialect.schemaByHand)
}

// timestampColumn is one TIMESTAMP column of an idalloc table, as
// information_schema.COLUMNS describes it.
type timestampColumn struct {
	Table    string  `db:"TABLE_NAME"`
	Column   string  `db:"COLUMN_NAME"`
	Nullable string  `db:"IS_NULLABLE"`
	Default  *string `db:"COLUMN_DEFAULT"`
	Extra    string  `db:"EXTRA"`
	Comment  string  `db:"COLUMN_COMMENT"`
}

// timestampColumns lists the TIMESTAMP columns of idalloc's tables in the
// current database, by table and position. MySQL and MariaDB before 11.5
// cannot store a TIMESTAMP after 2038-01-19 03:14:07 UTC, so every write of
// the current time to such a column fails from then on.
func timestampColumns(ctx context.Context, q sqlx.QueryerContext) ([]timestampColumn, error) {
	var cols []timestampColumn
	err := sqlx.SelectContext(ctx, q, &cols, `SELECT TABLE_NAME, COLUMN_NAME, IS_NULLABLE, COLUMN_DEFAULT, EXTRA, COLUMN_COMMENT
		FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND DATA_TYPE = 'timestamp'
			AND TABLE_NAME IN ('segments', 'segment_periods', 'worker_leases', 'worker_layouts', 'alloc_tokens', 'audit_log', 'idalloc_region')
		ORDER BY TABLE_NAME, ORDINAL_POSITION`)
	if err != nil {
		return nil, fmt.Errorf("check column types: %w", err)
	}
	return cols, nil
}

// datetimeAlters returns one ALTER TABLE per table that turns its TIMESTAMP
// columns into DATETIME(3), keeping each column's nullability, default,
// ON UPDATE and comment. Run in a session whose time_zone is '+00:00', the
// conversion turns every stored instant into its UTC wall-clock time, which
// is how idalloc reads and writes DATETIME.
func datetimeAlters(cols []timestampColumn) []string {
	var stmts []string
	for i := 0; i < len(cols); {
		table := cols[i].Table
		var mods []string
		for ; i < len(cols) && cols[i].Table == table; i++ {
			mods = append(mods, "MODIFY "+quoteIdent(cols[i].Column)+" "+datetimeDefinition(cols[i]))
		}
		stmts = append(stmts, "ALTER TABLE "+quoteIdent(table)+" "+strings.Join(mods, ", "))
	}
	return stmts
}

// datetimeDefinition is c's column definition with DATETIME(3) for its type.
func datetimeDefinition(c timestampColumn) string {
	def := "DATETIME(3)"
	if c.Nullable == "YES" {
		def += " NULL"
	} else {
		def += " NOT NULL"
	}
	if c.Default != nil {
		// MariaDB quotes a literal default and spells NULL as 'NULL';
		// MySQL gives the bare literal and a NULL default as NULL.
		switch d := *c.Default; {
		case strings.HasPrefix(strings.ToLower(d), "current_timestamp"):
			def += " DEFAULT CURRENT_TIMESTAMP(3)"
		case d == "NULL":
			def += " DEFAULT NULL"
		case strings.HasPrefix(d, "'"):
			def += " DEFAULT " + d
		default:
			def += " DEFAULT " + quoteString(d)
		}
	}
	if strings.Contains(strings.ToLower(c.Extra), "on update current_timestamp") {
		def += " ON UPDATE CURRENT_TIMESTAMP(3)"
	}
	if c.Comment != "" {
		def += " COMMENT " + quoteString(c.Comment)
	}
	return def
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// checkDatetime refuses tables with TIMESTAMP columns, naming the statements
// that fix them.
func (m *MySQL) checkDatetime(ctx context.Context) error {
	cols, err := timestampColumns(ctx, m.x)
	if err != nil || len(cols) == 0 {
		return err
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Table + "." + c.Column
	}
	// The session's time_zone decides how the stored instants convert, so
	// the statements to paste set it first.
	return fmt.Errorf("%w: TIMESTAMP cannot hold a time after 2038-01-19 03:14:07 UTC, and every fetch "+
		"would fail from then on: %s; convert to DATETIME(3) by starting once with -init-schema, "+
		"or run: SET time_zone = '+00:00'; %s;",
		ErrOutdatedSchema, strings.Join(names, ", "), strings.Join(datetimeAlters(cols), "; "))
}

// upgradeDatetime turns the TIMESTAMP columns of idalloc's tables into
// DATETIME(3). Every pooled connection has time_zone '+00:00' (see
// mysqlConfig), so the stored instants convert to UTC. It checks again
// afterwards, so a statement that changed nothing is reported.
func (m *MySQL) upgradeDatetime(ctx context.Context, report func(string)) error {
	cols, err := timestampColumns(ctx, m.x)
	if err != nil {
		return err
	}
	for _, stmt := range datetimeAlters(cols) {
		if _, err := m.x.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if len(cols) > 0 {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Table + "." + c.Column
		}
		report("converted TIMESTAMP columns " + strings.Join(names, ", ") + " to DATETIME(3)")
	}
	return m.checkDatetime(ctx)
}
