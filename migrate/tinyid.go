package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// tinyidSource is a Tinyid database (store.Tinyid): besides its rows as
// tags, each biz_type's delta and remainder, and its tokens.
type tinyidSource interface {
	Segments(ctx context.Context) ([]store.TinyidSegment, error)
	Tokens(ctx context.Context) ([]store.TinyidToken, error)
}

// tinyidRefusedError is a Tinyid database with rows idalloc cannot honour:
// each is listed in the report, and nothing was migrated. names are
// theirs, for the -skip-tags that would leave them out.
type tinyidRefusedError struct {
	refused, total int
	names          []string
}

func (e tinyidRefusedError) Error() string {
	msg := fmt.Sprintf("%d of %d Tinyid rows cannot be honoured (listed above, each with the reason); nothing was migrated", e.refused, e.total)
	if e.refused < e.total && !slices.ContainsFunc(e.names, func(n string) bool { return strings.ContainsAny(n, ", ") }) {
		msg += "; to migrate the others without them, add -skip-tags " + strings.Join(e.names, ",")
	}
	return msg
}

// checkTinyid refuses the whole migration when a row of tiny_id_info
// splits its sequence otherwise than the target's region (region, nil for
// a single region: delta 1, remainder 0): Tinyid then issues only the IDs
// ≡ remainder (mod delta) from that database, and another database issues
// the others, above this one's max_id as often as below it. A region of
// idalloc (docs/api.md §13) serves those same numbers when its count is delta
// and its ID remainder, so such rows are honoured there; carried into
// anything else, they would repeat the IDs the other databases issued.
// Every row refused is listed, then it returns a tinyidRefusedError,
// before the target is opened: nothing changes. The rows of skip are not
// looked at: they are left out.
func checkTinyid(ctx context.Context, src tinyidSource, region *segment.Region, skip skipSet, report func(string)) error {
	rows, err := src.Segments(ctx)
	if err != nil {
		return fmt.Errorf("read source: %w", err)
	}
	want := segment.Region{}.Normal()
	if region != nil {
		want = region.Normal()
	}
	var refused []string
	for _, r := range rows {
		if skip[r.BizType] || r.Delta == want.Count && r.Remainder == want.ID {
			continue
		}
		refused = append(refused, r.BizType)
		fix := "which no region of idalloc serves"
		if split := (segment.Region{Count: r.Delta, ID: r.Remainder}); r.Delta >= 1 && split.Check() == nil {
			fix = fmt.Sprintf("migrate it with -region-count %d -region-id %d into the database of that region", r.Delta, r.Remainder)
		}
		// %q: the name is the source's, not checked.
		report(fmt.Sprintf("%q: CANNOT BE HONOURED: delta %d and remainder %d, and the target serves %s: %s",
			r.BizType, r.Delta, r.Remainder, targetRegion(want), fix))
	}
	if len(refused) > 0 {
		return tinyidRefusedError{refused: len(refused), total: len(rows), names: refused}
	}
	return nil
}

// targetRegion names the region a Tinyid migration's target serves, as
// its flags give it.
func targetRegion(r segment.Region) string {
	if r.Single() {
		return "every number (no -region-count)"
	}
	return fmt.Sprintf("%s (-region-count %d -region-id %d)", r, r.Count, r.ID)
}

// tinyidGrant is one Tinyid token as idalloc's per-tag tokens take it
// (POST /tokens' name, token and app_tags): a name, the secret Tinyid's
// clients send, to be kept as the chosen token, and the tags it may ask
// for. Tinyid has a row per (token, biz_type); a grant gathers them.
type tinyidGrant struct {
	name   string
	secret string
	tags   []string
}

// tinyidGrants gathers tiny_id_token's rows by secret, each grant named
// after the lowest id among its rows ("tinyid-7"), its tags sorted.
func tinyidGrants(rows []store.TinyidToken) []tinyidGrant {
	var grants []tinyidGrant
	bySecret := map[string]int{}
	for _, r := range rows { // by id
		i, ok := bySecret[r.Token]
		if !ok {
			i = len(grants)
			bySecret[r.Token] = i
			grants = append(grants, tinyidGrant{name: "tinyid-" + strconv.FormatInt(r.ID, 10), secret: r.Token})
		}
		if !slices.Contains(grants[i].tags, r.BizType) {
			grants[i].tags = append(grants[i].tags, r.BizType)
		}
	}
	for i := range grants {
		slices.Sort(grants[i].tags)
	}
	return grants
}

// migrateTinyidTokens reads tiny_id_token and makes its grants idalloc's
// per-tag tokens in to (docs/api.md §12): each grant's name, its secret as the
// chosen token, so Tinyid's clients keep sending what they send, its
// tags but those of skip (a grant left with none is reported and not
// made). A grant already there (a second run) is left as it is; one
// idalloc cannot take (a secret too short, a tag that is not a valid
// app_tag) is reported and skipped: a token only decides who may ask for
// IDs, never which IDs there are, so the tags' migration stands without
// it. Each token made is in the audit log, by this command on this host.
func migrateTinyidTokens(ctx context.Context, src tinyidSource, to access.Store, skip skipSet, report func(string)) error {
	rows, err := src.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("read source: %w", err)
	}
	// The admin token is the server's config, which migrate does not
	// read: a secret equal to it is refused by the server at its start.
	admin, err := access.NewAdmin(to, segment.ValidTag, nil, "")
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	for _, g := range tinyidGrants(rows) {
		var without string
		if left := slices.DeleteFunc(slices.Clone(g.tags), func(t string) bool { return skip[t] }); len(left) < len(g.tags) {
			if len(left) == 0 {
				// %q: the tags are the source's biz_types.
				report(fmt.Sprintf("token %s for %q: not imported: every tag of it is left out (-skip-tags)", g.name, g.tags))
				continue
			}
			without = fmt.Sprintf("; without %q, left out", slices.DeleteFunc(slices.Clone(g.tags), func(t string) bool { return !skip[t] }))
			g.tags = left
		}
		_, tags, err := admin.Create(ctx, "idalloc migrate on "+host, access.NewToken{Name: g.name, AppTags: g.tags, Secret: g.secret})
		switch {
		case err == nil:
			report(fmt.Sprintf("token %s for %q: imported (Tinyid's secret kept as the chosen token%s)", g.name, tags, without))
		case errors.Is(err, access.ErrTokenExists), errors.Is(err, access.ErrSecretInUse):
			report(fmt.Sprintf("token %s for %q: there already (%v), left as it is", g.name, g.tags, err))
		case errs.KindOf(err) == errs.BadRequest:
			// %q: the tags are the source's biz_types.
			report(fmt.Sprintf("token %s for %q: not imported: %v", g.name, g.tags, err))
		default:
			return fmt.Errorf("token %s: %w", g.name, err)
		}
	}
	return nil
}
