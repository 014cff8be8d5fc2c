package segment

import "github.com/idalloc/idalloc/segment/dated"

// DatedFormat returns the format of tag when this allocator serves it and
// it is dated, else nil (another format, a tag not served yet, or a row
// this instance cannot serve). It asks no store and allocates nothing: a
// front end asks it after a Next to tell a dated tag's number, which it
// also writes as text (id_str), from another tag's, and to show a dated
// tag's settings (Period, TimeZone, Prefix, Separator). An allocator
// without dated tags answers from one atomic load.
func (a *Allocator) DatedFormat(tag string) *dated.Format {
	if !a.hasDated.Load() {
		return nil
	}
	if b := a.index.get(tag); b != nil && b.dated != nil {
		return b.dated.f
	}
	return nil
}
