package segment

import "github.com/idalloc/idalloc/segment/dated"

// TagRecord is a tag as every front end, the audit log and the tools show
// it: its settings, never its key, its MaxID or an instance's figures.
// Encoded by encoding/json it is POST /tags' answer and the detail of a
// tag.create audit entry (docs/api.md §2 "Tags (admin)", §12); a nil
// DatedSettings adds no field.
type TagRecord struct {
	AppTag      string `json:"app_tag"`
	Step        int64  `json:"step"`
	Start       int64  `json:"start"`
	Description string `json:"description"`
	Format      Format `json:"format"`
	Length      int    `json:"length"`
	*DatedSettings
}

// DatedSettings are a dated tag's settings beyond its length and start
// (docs/api.md §11), every default written out.
type DatedSettings struct {
	Period    dated.Period `json:"period"`
	TimeZone  string       `json:"time_zone"`
	Prefix    string       `json:"prefix"`
	Separator string       `json:"separator"`
}

// Record returns t's record, its dated settings as Settings(served)
// reads them.
func (t Tag) Record(served *dated.Format) TagRecord {
	return TagRecord{AppTag: t.AppTag, Step: t.Step, Start: t.Start, Description: t.Description,
		Format: t.Format, Length: t.Length, DatedSettings: t.Settings(served)}
}

// Settings returns dated tag t's settings: served's, when the caller has
// the format the allocator serves t in (Allocator.DatedFormat), which
// costs no parse of FormatSpec and no zone lookup; else FormatSpec's.
// It is nil for a tag of another format, and for a row whose FormatSpec
// this build cannot read (a newer version's), which it serves no ID of
// either.
func (t Tag) Settings(served *dated.Format) *DatedSettings {
	if t.Format != FormatDated {
		return nil
	}
	if served != nil {
		return &DatedSettings{served.Period(), served.TimeZone(), served.Prefix(), served.Separator()}
	}
	s, err := dated.ParseSpec(t.FormatSpec)
	if err != nil {
		return nil
	}
	return &DatedSettings{s.Period, s.TimeZone, s.Prefix, s.Separator}
}
