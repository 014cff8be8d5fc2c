package grpcapi

import (
	"cmp"
	"context"
	"strconv"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/errs"
	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/workerlease"
)

// A page of ListTags, as GET /tags's (docs/api.md §13).
const (
	defaultPageLimit = 1000
	maxPageLimit     = 10_000
)

var (
	errMissingStep = errs.E(errs.BadRequest, "step", "required, but for format dated (whose step defaults to 1000)", nil)
	errPrefix      = errs.E(errs.BadRequest, "prefix", "at most 64 of A-Z a-z 0-9 _ . : -, the start of a tag", nil)
	errAfter       = errs.E(errs.BadRequest, "after", "an app_tag: the previous page's next", nil)
	errLimit       = errs.E(errs.BadRequest, "limit", "from 1 to "+strconv.Itoa(maxPageLimit)+" (0: "+strconv.Itoa(defaultPageLimit)+")", nil)
)

// CreateTag creates a tag (admin), as POST /tags with one object, and
// answers it as GetTag does. The rules and their words are the
// allocator's (segment.CheckNewTag).
func (s *Server) CreateTag(ctx context.Context, req *idallocv1.CreateTagRequest) (*idallocv1.Tag, error) {
	if err := s.authorizeAdmin(ctx); err != nil {
		return nil, s.statusOf("CreateTag", err)
	}
	if req.Step == nil && req.GetFormat() != string(segment.FormatDated) {
		return nil, s.statusOf("CreateTag", errMissingStep)
	}
	t, err := s.seg.CreateTag(ctx, segment.NewTag{
		AppTag: req.GetAppTag(), Step: req.GetStep(), Start: req.Start, Description: req.GetDescription(),
		Format: segment.Format(req.GetFormat()), Length: req.GetLength(),
		Period: dated.Period(req.GetPeriod()), TimeZone: req.GetTimeZone(), Prefix: req.GetPrefix(), Separator: req.GetSeparator(),
	})
	if err != nil {
		return nil, s.statusOf("CreateTag", err)
	}
	s.log.Info("tag created", "app_tag", t.AppTag, "step", t.Step, "start", t.Start,
		"format", string(t.Format), "length", t.Length, "format_spec", t.FormatSpec, "via", "grpc", "remote", peerAddr(ctx))
	s.record(ctx, access.ActionTagCreate, t.AppTag, t.Record(s.seg.DatedFormat(t.AppTag)))
	return s.tagOf(t), nil
}

// GetTag answers one tag as ListTags lists it, from the tag list of the
// last reload.
func (s *Server) GetTag(ctx context.Context, req *idallocv1.GetTagRequest) (*idallocv1.Tag, error) {
	if err := s.authorizeListing(ctx); err != nil {
		return nil, s.statusOf("GetTag", err)
	}
	tag := req.GetAppTag()
	if !segment.ValidTag(tag) {
		return nil, s.statusOf("GetTag", segment.ErrInvalidTag)
	}
	// The tag itself sorts first among those it begins.
	p := s.seg.TagPage(segment.PageQuery{Prefix: tag, Limit: 1})
	if len(p.Tags) == 0 || p.Tags[0].AppTag != tag {
		return nil, s.statusOf("GetTag", segment.ErrUnknownTag)
	}
	return s.tagOf(p.Tags[0]), nil
}

// ListTags answers a page of the tags by name, as GET /tags: from the tag
// list of the last reload, without a store query.
func (s *Server) ListTags(ctx context.Context, req *idallocv1.ListTagsRequest) (*idallocv1.ListTagsResponse, error) {
	if err := s.authorizeListing(ctx); err != nil {
		return nil, s.statusOf("ListTags", err)
	}
	q := segment.PageQuery{Prefix: req.GetPrefix(), After: req.GetAfter(), Limit: defaultPageLimit}
	switch l := req.GetLimit(); {
	case q.Prefix != "" && !segment.ValidTag(q.Prefix):
		return nil, s.statusOf("ListTags", errPrefix)
	case q.After != "" && !segment.ValidTag(q.After):
		return nil, s.statusOf("ListTags", errAfter)
	case l < 0 || l > maxPageLimit:
		return nil, s.statusOf("ListTags", errLimit)
	case l > 0:
		q.Limit = int(l)
	}
	p := s.seg.TagPage(q)
	out := &idallocv1.ListTagsResponse{Tags: make([]*idallocv1.Tag, len(p.Tags)), Total: int64(p.Total), Next: p.Next}
	for i, t := range p.Tags {
		out.Tags[i] = s.tagOf(t)
	}
	return out, nil
}

// UpdateTag changes a tag's step or description (admin), as PATCH
// /tags/{app_tag}, and answers the tag as GetTag does.
func (s *Server) UpdateTag(ctx context.Context, req *idallocv1.UpdateTagRequest) (*idallocv1.Tag, error) {
	if err := s.authorizeAdmin(ctx); err != nil {
		return nil, s.statusOf("UpdateTag", err)
	}
	tag := req.GetAppTag()
	if !segment.ValidTag(tag) {
		return nil, s.statusOf("UpdateTag", segment.ErrInvalidTag)
	}
	c := segment.TagChange{Step: req.Step, Description: req.Description}
	t, err := s.seg.UpdateTag(ctx, tag, c)
	if err != nil {
		return nil, s.statusOf("UpdateTag", err)
	}
	s.record(ctx, access.ActionTagUpdate, t.AppTag, struct {
		Step        *int64  `json:"step,omitempty"`
		Description *string `json:"description,omitempty"`
	}{c.Step, c.Description})
	s.log.Info("tag updated", "app_tag", t.AppTag, "step", t.Step, "step_changed", c.Step != nil,
		"description_changed", c.Description != nil, "via", "grpc", "remote", peerAddr(ctx))
	return s.tagOf(t), nil
}

// tagOf is t with this instance's figures, as GET /tags lists it. A
// scrambled tag's key is never in it.
func (s *Server) tagOf(t segment.Tag) *idallocv1.Tag {
	snap, _ := s.seg.Snapshot(t.AppTag) // zeros for a tag not served here yet
	out := &idallocv1.Tag{
		AppTag: t.AppTag, Format: string(cmp.Or(t.Format, segment.FormatSequential)), Length: int64(t.Length),
		MaxId: t.MaxID, Step: t.Step, CurrentStep: snap.Step, Left: snap.Buffered,
		UpdateTime: formatTime(t.UpdateTime), Description: t.Description,
		GivenBack: snap.GivenBack, Wasted: snap.Wasted,
	}
	if t.Start != 0 {
		out.Start = &t.Start
	}
	if d := t.Settings(s.seg.DatedFormat(t.AppTag)); d != nil {
		out.Period, out.TimeZone, out.Prefix, out.Separator = string(d.Period), d.TimeZone, d.Prefix, d.Separator
	}
	return out
}

// record writes an admin change made by ctx's call to the audit log; a
// failure is logged, not answered (access.Admin.Note).
func (s *Server) record(ctx context.Context, action access.Action, subject string, detail any) {
	if s.audit == nil {
		return
	}
	s.audit.Note(ctx, s.log.With("via", "grpc", "remote", peerAddr(ctx)),
		access.Change{Caller: s.caller(ctx), Action: action, Subject: subject, Detail: detail})
}

// AcquireWorkerID leases a worker ID to a process that runs its own
// generator (admin), as POST /workerid.
func (s *Server) AcquireWorkerID(ctx context.Context, req *idallocv1.AcquireWorkerIDRequest) (*idallocv1.WorkerLease, error) {
	if err := s.leaseCall(ctx, req.Cluster); err != nil {
		return nil, s.statusOf("AcquireWorkerID", err)
	}
	// The peer's address comes from the socket, not the client's words,
	// so it is a safe note for operators reading the table.
	l, err := s.leases.Acquire(ctx, req.GetCluster(), "grpc "+peerAddr(ctx))
	if err != nil {
		return nil, s.statusOf("AcquireWorkerID", err)
	}
	out := s.leaseOf(l)
	out.Token = l.Token
	return out, nil
}

// RenewWorkerID renews a lease (admin), as POST /workerid/renew; the
// answer carries no token.
func (s *Server) RenewWorkerID(ctx context.Context, req *idallocv1.RenewWorkerIDRequest) (*idallocv1.WorkerLease, error) {
	if err := s.leaseCall(ctx, req.Cluster); err != nil {
		return nil, s.statusOf("RenewWorkerID", err)
	}
	l, err := s.leases.Renew(ctx, req.GetCluster(), req.GetWorkerId(), req.GetToken(), req.GetLastTimestampMs())
	if err != nil {
		return nil, s.statusOf("RenewWorkerID", err)
	}
	return s.leaseOf(l), nil
}

// ReleaseWorkerID gives a lease back (admin), as POST /workerid/release.
func (s *Server) ReleaseWorkerID(ctx context.Context, req *idallocv1.ReleaseWorkerIDRequest) (*idallocv1.ReleaseWorkerIDResponse, error) {
	if err := s.leaseCall(ctx, req.Cluster); err != nil {
		return nil, s.statusOf("ReleaseWorkerID", err)
	}
	if err := s.leases.Release(ctx, req.GetCluster(), req.GetWorkerId(), req.GetToken(), req.GetLastTimestampMs()); err != nil {
		return nil, s.statusOf("ReleaseWorkerID", err)
	}
	return &idallocv1.ReleaseWorkerIDResponse{}, nil
}

// leaseCall is nil when ctx's call may make a worker-ID call naming
// cluster (nil: the default): an admin call, on an instance with leases,
// naming a cluster other than "", which the Service would read as the
// default while the client named one.
func (s *Server) leaseCall(ctx context.Context, cluster *string) error {
	if err := s.authorizeAdmin(ctx); err != nil {
		return err
	}
	if s.leases == nil {
		return errNoLeases
	}
	if cluster != nil && *cluster == "" {
		return workerlease.ErrInvalidCluster
	}
	return nil
}

func (s *Server) leaseOf(l workerlease.Lease) *idallocv1.WorkerLease {
	return &idallocv1.WorkerLease{
		WorkerId: l.WorkerID, Cluster: l.Cluster, LeaseMs: s.leases.TTL().Milliseconds(),
		ExpiresAt: formatTime(l.ExpiresAt), LastTimestampMs: l.LastTimestampMS, NoHistory: l.NoHistory,
	}
}
