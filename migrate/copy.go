package migrate

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// historyTarget is the part of a target migrateLeases writes.
type historyTarget interface {
	CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error
	RaiseLeaseTimestamp(ctx context.Context, lt store.LeaseTimestamp) error
}

// historySource is the part of a source migrateLeases reads.
type historySource interface {
	LeaseTimestamps(ctx context.Context) ([]store.LeaseTimestamp, error)
	Layouts(ctx context.Context) ([]store.ClusterLayout, error)
}

// migrateLeases carries every cluster's snowflake layout (a target already
// using another one is refused) and every worker ID's last_timestamp_ms over,
// so a new holder on the target starts after the old holders' last
// timestamp even if its clock is behind.
func migrateLeases(ctx context.Context, from historySource, to historyTarget, report func(string)) error {
	layouts, err := from.Layouts(ctx)
	if err != nil {
		return err
	}
	for _, l := range layouts {
		if err := to.CheckLayout(ctx, l.Cluster, l.EpochMS, l.WorkerBits); err != nil {
			return err
		}
	}
	rows, err := from.LeaseTimestamps(ctx)
	if err != nil {
		return err
	}
	for _, lt := range rows {
		if err := to.RaiseLeaseTimestamp(ctx, lt); err != nil {
			return err
		}
	}
	report(fmt.Sprintf("worker leases: %d last timestamps carried over", len(rows)))
	return nil
}

// refusedTagsError reports the source tags that were not migrated; each was
// listed in the report with its reason.
type refusedTagsError struct{ refused, total int }

func (e refusedTagsError) Error() string {
	return fmt.Sprintf("%d of %d tags not migrated (listed above, each with the reason); every other tag was", e.refused, e.total)
}

// migrateTags carries every tag idalloc can take but those of skip, which
// it reports as left out, reports each one it cannot take with the
// reason, and then returns a refusedTagsError if any was. carried names
// the tags the target now has as the source has them, whose period
// counters may follow (migratePeriods).
func migrateTags(ctx context.Context, from tagSource, to segment.Store, skip skipSet, report func(string)) (carried map[string]bool, err error) {
	src, err := from.Tags(ctx)
	if err != nil {
		return nil, fmt.Errorf("read source tags: %w", err)
	}
	dst, err := to.Tags(ctx)
	if err != nil {
		return nil, fmt.Errorf("read target tags: %w", err)
	}
	carried = make(map[string]bool, len(src))
	have := make(map[string]segment.Tag, len(dst))
	for _, t := range dst {
		have[t.AppTag] = t
	}
	refused := 0
	for _, t := range src {
		if skip.leftOut(t.AppTag, report) {
			continue
		}
		if why := refusal(t); why != "" {
			// %q: the name is the source's, not checked, and may hold
			// anything a terminal would act on.
			report(fmt.Sprintf("%q: NOT MIGRATED: %s", t.AppTag, why))
			refused++
			continue
		}
		cur, ok := have[t.AppTag]
		if ok && !sameFormat(cur, t) {
			// Raising max_id would not make the target's IDs the
			// source's: another format (or key) maps the same sequence
			// to other numbers, which may repeat ones issued there.
			report(fmt.Sprintf("%q: NOT MIGRATED: the target has it as %s, the source as %s", t.AppTag, formatName(cur), formatName(t)))
			refused++
			continue
		}
		var line string
		switch {
		case t.Format == segment.FormatDated && !ok:
			// Its row's max_id counts nothing: its start is the first
			// number of every period, and the counters follow.
			err = to.CreateTag(ctx, segment.Tag{AppTag: t.AppTag, Step: t.Step, Start: t.Start, Description: t.Description,
				Format: t.Format, Length: t.Length, FormatSpec: t.FormatSpec})
			line = fmt.Sprintf("%s: created, %s; its period counters follow", t.AppTag, formatName(t))
		case t.Format == segment.FormatDated:
			line = fmt.Sprintf("%s: the target has it as %s already; its period counters follow", t.AppTag, formatName(t))
		case !ok:
			// The format, length and a scrambled tag's key come along:
			// the tag's next IDs continue its sequence in its format.
			err = to.CreateTag(ctx, segment.Tag{AppTag: t.AppTag, Step: t.Step, Start: t.MaxID + 1, Description: t.Description,
				Format: t.Format, Length: t.Length, FormatKey: t.FormatKey})
			line = fmt.Sprintf("%s: created, max_id %d", t.AppTag, t.MaxID)
		case cur.MaxID < t.MaxID:
			err = raise(ctx, to, t.AppTag, cur.MaxID, t.MaxID)
			line = fmt.Sprintf("%s: max_id raised from %d to at least %d", t.AppTag, cur.MaxID, t.MaxID)
		default:
			line = fmt.Sprintf("%s: target max_id %d already >= %d", t.AppTag, cur.MaxID, t.MaxID)
		}
		if err != nil {
			return carried, fmt.Errorf("migrate %q: %w", t.AppTag, err)
		}
		carried[t.AppTag] = true
		report(line)
	}
	if refused > 0 {
		return carried, refusedTagsError{refused: refused, total: len(src)}
	}
	return carried, nil
}

// refusal says why idalloc cannot take t as it is, or "" when it can:
// what no row may hold (segment.CheckRow, in its words), or a tag with no
// ID left to issue, which there is no point in carrying.
func refusal(t segment.Tag) string {
	if err := segment.CheckRow(t); err != nil {
		if e, ok := errs.Describe(err); ok {
			return e.Reason
		}
		return err.Error()
	}
	if t.MaxID >= segment.MaxUsableID {
		return fmt.Sprintf("max_id %d leaves no ID up to idalloc's highest, %d", t.MaxID, segment.MaxUsableID)
	}
	return ""
}

// sameFormat reports whether a and b serve their sequence as the same IDs:
// for dated tags, the same settings (their spec is canonical, so equal
// settings are equal text) and the same first number of every period.
func sameFormat(a, b segment.Tag) bool {
	f := cmp.Or(a.Format, segment.FormatSequential)
	return f == cmp.Or(b.Format, segment.FormatSequential) &&
		a.Length == b.Length && bytes.Equal(a.FormatKey, b.FormatKey) &&
		a.FormatSpec == b.FormatSpec && (f != segment.FormatDated || a.Start == b.Start)
}

// formatName names t's format for a report, without its key.
func formatName(t segment.Tag) string {
	f := cmp.Or(t.Format, segment.FormatSequential)
	if f == segment.FormatSequential {
		return string(f)
	}
	s := fmt.Sprintf("%s of length %d", f, t.Length)
	switch f {
	case segment.FormatScrambled:
		s += " (with its own key)"
	case segment.FormatDated:
		s += datedSettings(t)
	}
	return s
}

// datedSettings are dated row t's settings for a report: what tells two
// dated formats apart.
func datedSettings(t segment.Tag) string {
	d := t.Settings(nil)
	if d == nil {
		// %q: the source's text, unchecked.
		return fmt.Sprintf(" (settings %q, start %d)", t.FormatSpec, t.Start)
	}
	s := fmt.Sprintf(" (period %s, time_zone %s", d.Period, d.TimeZone)
	if d.Prefix != "" {
		s += ", prefix " + d.Prefix
	}
	if d.Separator != "" {
		s += ", separator " + d.Separator
	}
	return s + fmt.Sprintf(", start %d)", t.Start)
}

// raise advances tag's max_id on st to at least want, from a read of have.
// It checks what each fetch returns and goes on until it is there: a live
// instance on the target may give IDs back between the read and the fetch.
// Its fetches stop at no format's last number: want is the source's
// max_id, which the target's must reach whatever the format.
func raise(ctx context.Context, st segment.Store, tag string, have, want int64) error {
	for have < want {
		f, err := st.Fetch(ctx, tag, math.MaxInt64, want-have)
		if err != nil {
			return err
		}
		have = f.MaxID
	}
	return nil
}
