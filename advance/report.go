package advance

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idalloc/idalloc/segment"
)

// Advance's output: each line goes to Report as it happens, so a store
// failing midway leaves a report of what moved.

func (a Advance) say(line string) {
	if a.Report != nil {
		a.Report(line)
	}
}

func (a Advance) dry() string {
	if a.DryRun {
		return " (dry run)"
	}
	return ""
}

// summary is the last line of the output.
func (a Advance) summary(s tally) string {
	var parts []string
	if a.Segments {
		moved := plural(s.Tags, "tag") + " moved"
		if s.Periods > 0 {
			moved += fmt.Sprintf(" (%s of dated tags among them)", plural(s.Periods, "period"))
		}
		parts = append(parts, fmt.Sprintf("%s, %d IDs in all", moved, s.IDs))
	}
	switch {
	case a.Leases && s.ToMS == 0:
		parts = append(parts, "worker leases not reached")
	case a.Leases:
		parts = append(parts, fmt.Sprintf("%d of %s raised to last_timestamp_ms %d (%s, now + %s)",
			s.Raised, plural(s.Leases, "worker lease"), s.ToMS, time.UnixMilli(s.ToMS).UTC().Format(time.RFC3339), a.leaseFor()))
	}
	head := "advanced: "
	if a.DryRun {
		head = "dry run, nothing written; would have advanced: "
	}
	return head + strings.Join(parts, "; ")
}

// plural is "1 tag", "2 tags".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// shown is a tag's name for the output: quoted unless valid, since a row
// edited by hand may hold anything a terminal would act on.
func shown(tag string) string {
	if segment.ValidTag(tag) {
		return tag
	}
	return strconv.Quote(tag)
}

// formatName names t's format for a refusal.
func formatName(t segment.Tag) string {
	if t.Length == 0 {
		return string(t.Format)
	}
	return fmt.Sprintf("%s(%d)", t.Format, t.Length)
}
