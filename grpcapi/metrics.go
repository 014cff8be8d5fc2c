package grpcapi

import (
	"context"
	"path"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/idalloc/idalloc/frontend"
)

// Metrics are the front end's figures:
//
//	idalloc_grpc_requests_total{method, code}  calls answered, by method and status code
//
// and the connection cap's (frontend.Metrics, subsystem "grpc", cap
// grpc_max_conns).
type Metrics struct {
	requests *prometheus.CounterVec
	conns    *frontend.Metrics
}

// NewMetrics makes the front end's figures and registers them on reg. It
// fails only when reg holds those names already.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	return newMetrics(reg)
}

// newMetrics is NewMetrics on a registry of its own when reg is nil.
func newMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	conns, err := frontend.NewMetrics(reg, "grpc", "grpc_max_conns")
	if err != nil {
		return nil, err
	}
	m := &Metrics{
		conns: conns,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "idalloc", Subsystem: "grpc", Name: "requests_total",
			Help: "gRPC calls answered, by method (its last name: Next, Check, …) and status code (OK, NotFound, Unavailable, …).",
		}, []string{"method", "code"}),
	}
	if err := reg.Register(m.requests); err != nil {
		return nil, err
	}
	return m, nil
}

// countUnary marks the call's connection busy while it runs, and counts
// it by its answer's code.
func (s *Server) countUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if c := connOf(ctx); c != nil {
		c.begin()
		defer c.end()
	}
	resp, err := h(ctx, req)
	s.m.requests.WithLabelValues(path.Base(info.FullMethod), status.Code(err).String()).Inc()
	return resp, err
}

// countStream is countUnary for streams: a connection with a stream open
// is busy.
func (s *Server) countStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if c := connOf(ss.Context()); c != nil {
		c.begin()
		defer c.end()
	}
	err := h(srv, ss)
	s.m.requests.WithLabelValues(path.Base(info.FullMethod), status.Code(err).String()).Inc()
	return err
}
