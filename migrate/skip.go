package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// skipSet is the source tags -skip-tags leaves out of a migration: not
// copied, nor their period counters, and dropped from the Tinyid tokens
// imported. A Tinyid row that cannot be honoured (checkTinyid) blocks
// nothing once left out, as Tinyid's own sample data (test_odd, of delta
// 2) needs.
type skipSet map[string]bool

// parseSkip reads -skip-tags: names separated by commas, each trimmed of
// the spaces around it. An empty name is refused.
func parseSkip(v string) (skipSet, error) {
	skip := skipSet{}
	if v == "" {
		return skip, nil
	}
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("-skip-tags %q: an empty name; give source tags separated by commas", v)
		}
		skip[name] = true
	}
	return skip, nil
}

// check refuses a skip set that names a tag the source does not have,
// naming each, before anything is written: a misspelt name would
// otherwise leave out nothing, and the row meant to be left out would
// block or be copied.
func (s skipSet) check(ctx context.Context, from tagSource) error {
	if len(s) == 0 {
		return nil
	}
	tags, err := from.Tags(ctx)
	if err != nil {
		return fmt.Errorf("read source tags: %w", err)
	}
	have := make(map[string]bool, len(tags))
	for _, t := range tags {
		have[t.AppTag] = true
	}
	var missing []string
	for name := range s {
		if !have[name] {
			missing = append(missing, fmt.Sprintf("%q", name))
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("-skip-tags names %s, which the source does not have; nothing was migrated", strings.Join(missing, ", "))
	}
	return nil
}

// leftOut reports tag as left out, and whether it is.
func (s skipSet) leftOut(tag string, report func(string)) bool {
	if !s[tag] {
		return false
	}
	// %q: the name is the source's, not checked.
	report(fmt.Sprintf("%q: left out (-skip-tags)", tag))
	return true
}
