package store

import (
	"strings"
	"testing"
)

func TestDatetimeAlters(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		cols []timestampColumn
		want []string
	}{
		{
			name: "update_time of schema.sql before DATETIME (MariaDB's spelling)",
			cols: []timestampColumn{{Table: "segments", Column: "update_time", Nullable: "NO",
				Default: str("current_timestamp(3)"), Extra: "on update current_timestamp(3)"}},
			want: []string{"ALTER TABLE `segments` MODIFY `update_time` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)"},
		},
		{
			name: "seed-style TIMESTAMP without fraction (MySQL's spelling)",
			cols: []timestampColumn{{Table: "segments", Column: "update_time", Nullable: "NO",
				Default: str("CURRENT_TIMESTAMP"), Extra: "DEFAULT_GENERATED on update CURRENT_TIMESTAMP"}},
			want: []string{"ALTER TABLE `segments` MODIFY `update_time` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)"},
		},
		{
			name: "columns of two tables, nullable, literal defaults, comment",
			cols: []timestampColumn{
				{Table: "segments", Column: "created", Nullable: "YES", Default: str("NULL")},
				{Table: "segments", Column: "checked", Nullable: "YES"},
				{Table: "segments", Column: "since", Nullable: "NO", Default: str("'2001-02-03 04:05:06'"), Comment: `it's a \ time`},
				{Table: "worker_leases", Column: "expires_at", Nullable: "NO", Default: str("2001-02-03 04:05:06")},
			},
			want: []string{
				"ALTER TABLE `segments` MODIFY `created` DATETIME(3) NULL DEFAULT NULL, " +
					"MODIFY `checked` DATETIME(3) NULL, " +
					`MODIFY ` + "`since`" + ` DATETIME(3) NOT NULL DEFAULT '2001-02-03 04:05:06' COMMENT 'it''s a \\ time'`,
				"ALTER TABLE `worker_leases` MODIFY `expires_at` DATETIME(3) NOT NULL DEFAULT '2001-02-03 04:05:06'",
			},
		},
		{name: "nothing to do", cols: nil, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := datetimeAlters(tc.cols)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("datetimeAlters got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
