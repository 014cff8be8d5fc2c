package resp

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/frontend"
)

// command is a command this front end knows, as a metrics label.
type command uint8

// The commands, in the order of commandNames.
const (
	cmdOther command = iota // anything else, however it is spelled
	cmdGet
	cmdIncr
	cmdIncrBy
	cmdMget
	cmdIDs
	cmdSnowflake
	cmdHset
	cmdInfo
	cmdDel
	cmdAuth
	cmdPing
	cmdEcho
	cmdHello
	cmdClient
	cmdCommand
	cmdSelect
	cmdQuit
	cmdConfig
	cmdKeys
	cmdHgetall
	numCommands
)

// commandNames are the command label's values: a fixed set, so a client
// cannot mint series by sending made-up names.
var commandNames = [numCommands]string{
	"other", "get", "incr", "incrby", "mget", "ids", "snowflake", "hset", "info", "del", "auth",
	"ping", "echo", "hello", "client", "command", "select", "quit", "config", "keys", "hgetall",
}

// outcome is how a command was answered, as a metrics label.
type outcome uint8

const (
	outOK       outcome = iota
	outErr              // an ERR reply (bad input, unknown tag or command, exists, exhausted)
	outNoAuth           // NOAUTH, or AUTH refused: admin rights missing
	outTryAgain         // TRYAGAIN: unavailable, clock backwards, no worker ID
	outInternal         // an internal error, logged
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "err", "noauth", "tryagain", "internal"}

// Metrics are the front end's metrics, registered on the registry given to
// NewMetrics (main's, which /metrics serves):
//
//	idalloc_resp_commands_total{command,outcome}  commands answered
//	idalloc_resp_connections_closed_total{reason} connections the server cut:
//	                                              reason output_limit, answers
//	                                              waiting past resp_max_pending;
//	                                              output_total, the connection
//	                                              holding the most when those of
//	                                              all would pass
//	                                              resp_max_pending_total;
//	                                              command_timeout, a command
//	                                              incomplete at
//	                                              resp_command_timeout
//
// and the connection cap's (frontend.Metrics): idalloc_resp_connections
// (open, at most resp_max_conns), idalloc_resp_idle_connections_closed_total
// and idalloc_resp_incomplete_connections_closed_total (closed to make room
// at the cap: idle, or partway through a command),
// idalloc_resp_connections_refused_total (refused at the cap, every one
// busy).
//
// Segment IDs issued over RESP are counted with every other in
// idalloc_ids_issued_total{mode="segment"}, which reads the allocator's own
// figures; snowflake IDs in idalloc_ids_issued_total{mode="snowflake"},
// which the generators report to their snowflake.Observer whichever front
// end asked. Neither is counted here.
type Metrics struct {
	commands       [numCommands][numOutcomes]prometheus.Counter
	conns          *frontend.Metrics
	outputLimit    prometheus.Counter
	outputTotal    prometheus.Counter
	commandTimeout prometheus.Counter
}

// NewMetrics makes the metrics and registers them on reg. It fails only when
// reg already holds metrics of the same names. Every command and outcome
// series exists from the start, at 0, so rate() sees the first one.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "idalloc", Subsystem: "resp", Name: "commands_total",
		Help: "Commands answered over the Redis protocol, by command (\"other\" for unknown ones) and outcome: ok, err, noauth, tryagain, internal.",
	}, []string{"command", "outcome"})
	m := &Metrics{}
	for c := range numCommands {
		for o := range numOutcomes {
			m.commands[c][o] = vec.WithLabelValues(commandNames[c], outcomeNames[o])
		}
	}
	// Labelled by reason: connections are cut for other reasons too (idle,
	// bad input), which can join this series rather than new names.
	closed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "idalloc", Subsystem: "resp", Name: "connections_closed_total",
		Help: "Redis-protocol connections the server closed, by reason: output_limit (answers waiting for the client to read them passed resp_max_pending), output_total (the connection holding the most answers waiting, when those of all connections would pass resp_max_pending_total), command_timeout (a command begun and not complete within resp_command_timeout).",
	}, []string{"reason"})
	m.outputLimit = closed.WithLabelValues("output_limit")
	m.outputTotal = closed.WithLabelValues("output_total")
	m.commandTimeout = closed.WithLabelValues("command_timeout")
	for _, c := range []prometheus.Collector{vec, closed} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	m.conns, err = frontend.NewMetrics(reg, "resp", "resp_max_conns")
	return m, err
}

func (m *Metrics) count(c command, o outcome) { m.commands[c][o].Inc() }
