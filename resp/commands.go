package resp

import (
	"net/netip"
	"runtime/debug"
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/snowflake"
)

// session is one connection's state, kept as redcon's connection context.
// Only the connection's own goroutine touches it.
type session struct {
	id       int64
	remote   string
	loopback bool // the peer is 127.0.0.0/8 or ::1
	admin    bool // AUTH succeeded with the admin token
	// token is the per-tag token AUTH was sent, which the guard checks
	// at each ID command (a revoked one is refused from the guard's next
	// reload on); "" when none was.
	token   string
	closing bool // answered its last command: ignore the rest of the batch
	name    string
	// lastTag is the tag of the last command, so a connection asking for
	// the same tag again and again converts its bytes to a string once.
	lastTag string
	num     [dated.MaxTextLength]byte // an ID's digits, or a dated tag's text ID
	ids     []int64                   // scratch for IDS, and MGET's answer ends
	text    []byte                    // scratch for MGET's answers (text.go)
	// out is the connection as the handlers write to it.
	out meter
}

func newSession(id int64, remote string) *session {
	ap, err := netip.ParseAddrPort(remote)
	return &session{id: id, remote: remote, loopback: err == nil && ap.Addr().Unmap().IsLoopback()}
}

// tag returns b as a string, without allocating when b is the last tag.
func (ses *session) tag(b []byte) string {
	if string(b) != ses.lastTag {
		ses.lastTag = string(b)
	}
	return ses.lastTag
}

// scratchLimit is the largest scratch slice a session keeps between
// commands; a larger batch gets a slice of its own.
const scratchLimit = MaxArgs

// scratch returns a slice of n int64s for one command's IDs.
func (ses *session) scratch(n int) []int64 {
	if n > scratchLimit {
		return make([]int64, n)
	}
	if cap(ses.ids) < n {
		ses.ids = make([]int64, n, max(n, 64))
	}
	return ses.ids[:n]
}

// handler serves one command whose name has been matched: it writes the
// answer and returns nil, or returns the error to answer with.
type handler func(s *Server, c redcon.Conn, ses *session, args [][]byte) error

// handlers is the one command table.
var handlers = [numCommands]handler{
	cmdOther:     func(*Server, redcon.Conn, *session, [][]byte) error { return errUnknownCmd },
	cmdGet:       (*Server).get,
	cmdIncr:      (*Server).incr,
	cmdIncrBy:    (*Server).incrBy,
	cmdMget:      (*Server).mget,
	cmdIDs:       (*Server).ids,
	cmdSnowflake: (*Server).snowflake,
	cmdHset:      (*Server).hset,
	cmdInfo:      (*Server).info,
	cmdDel:       (*Server).del,
	cmdAuth:      (*Server).auth,
	cmdPing:      (*Server).ping,
	cmdEcho:      (*Server).echo,
	cmdHello:     (*Server).hello,
	cmdClient:    (*Server).client,
	cmdCommand:   (*Server).command,
	cmdSelect:    (*Server).selectDB,
	cmdQuit:      (*Server).quit,
	cmdConfig:    (*Server).config,
	cmdKeys:      (*Server).keys,
	cmdHgetall:   (*Server).hgetall,
}

// cmdHTTP is what lookup returns for a line of an HTTP request (POST, or a
// Host: header): not a command, and counted as "other".
const cmdHTTP = numCommands

// lookup matches a command name, in any case, without allocating.
func lookup(name []byte) command {
	var lc [16]byte
	if len(name) > len(lc) {
		return cmdOther
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lc[i] = c
	}
	switch string(lc[:len(name)]) {
	case "get":
		return cmdGet
	case "incr":
		return cmdIncr
	case "incrby":
		return cmdIncrBy
	case "mget":
		return cmdMget
	case "ids":
		return cmdIDs
	case "snowflake":
		return cmdSnowflake
	case "hset":
		return cmdHset
	case "info":
		return cmdInfo
	case "del":
		return cmdDel
	case "auth":
		return cmdAuth
	case "ping":
		return cmdPing
	case "echo":
		return cmdEcho
	case "hello":
		return cmdHello
	case "client":
		return cmdClient
	case "command":
		return cmdCommand
	case "select":
		return cmdSelect
	case "quit":
		return cmdQuit
	case "config":
		return cmdConfig
	case "keys":
		return cmdKeys
	case "hgetall":
		return cmdHgetall
	case "post", "host:":
		return cmdHTTP
	}
	return cmdOther
}

// serveCommand is redcon's handler: it runs one command of a batch; redcon
// flushes the batch's answers after the last, flushEarly before when they
// are large.
func (s *Server) serveCommand(c redcon.Conn, cmd redcon.Command) {
	ses, _ := c.Context().(*session)
	if ses == nil || ses.closing || len(cmd.Args) == 0 {
		return
	}
	s.run(&ses.out, ses, cmd)
	s.flushEarly(c, ses)
}

// run answers one command.
func (s *Server) run(c redcon.Conn, ses *session, cmd redcon.Command) {
	defer s.recoverPanic(c, ses)
	name := lookup(cmd.Args[0])
	if name == cmdHTTP {
		s.fail(c, ses, cmdOther, errHTTP)
		return
	}
	if err := handlers[name](s, c, ses, cmd.Args); err != nil {
		s.fail(c, ses, name, err)
		return
	}
	s.metrics.count(name, outOK)
}

// fail answers err and counts it. Internal errors are logged with the
// connection's address, which is all that identifies a RESP request.
func (s *Server) fail(c redcon.Conn, ses *session, name command, err error) {
	line, out, internal := classify(err)
	if internal {
		s.log.Error("resp: command failed", "err", err, "command", commandNames[name], "remote", ses.remote)
	}
	c.WriteError(line)
	s.metrics.count(name, out)
	if re, ok := err.(*replyError); ok && re.close {
		ses.closing = true
		_ = c.Close()
	}
}

// recoverPanic answers a command that panicked as an internal error and
// closes its connection, rather than let one command end the process.
func (s *Server) recoverPanic(c redcon.Conn, ses *session) {
	if r := recover(); r != nil {
		s.log.Error("resp: panic serving a command", "panic", r, "remote", ses.remote, "stack", string(debug.Stack()))
		c.WriteError(errInternal.line)
		s.metrics.count(cmdOther, outInternal)
		ses.closing = true
		_ = c.Close()
	}
}

// arity is the refusal of a command with the wrong number of arguments, or
// of an HTTP request line ("GET / HTTP/1.1") that reads as one.
func arity(name command, args [][]byte) error {
	if len(args) == 3 && len(args[2]) >= 5 && string(args[2][:5]) == "HTTP/" {
		return errHTTP
	}
	return arityErrors[name]
}

var arityErrors = func() (errs [numCommands]*replyError) {
	for c := range numCommands {
		errs[c] = wrongArgs(commandNames[c])
	}
	return errs
}()

// get serves GET tag: the next ID as a bulk string. Every format keeps its
// width by construction (a fixed_length or scrambled ID has exactly length
// digits), so the digits are the ID's own; a dated tag's ID is its text
// (text.go), digits alone for one without prefix and separator.
func (s *Server) get(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) != 2 {
		return arity(cmdGet, args)
	}
	tag := ses.tag(args[1])
	if err := s.allowTag(ses, tag); err != nil {
		return err
	}
	id, err := s.seg.Next(s.ctx, tag)
	if err != nil {
		return s.getText(c, ses, tag, err)
	}
	c.WriteBulk(strconv.AppendInt(ses.num[:0], id, 10))
	return nil
}

// incr serves INCR tag: the next ID as an integer reply.
func (s *Server) incr(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) != 2 {
		return arity(cmdIncr, args)
	}
	tag := ses.tag(args[1])
	if err := s.allowTag(ses, tag); err != nil {
		return err
	}
	id, err := s.seg.Next(s.ctx, tag)
	if err != nil {
		return incrError(err)
	}
	c.WriteInt64(id)
	return nil
}

// incrBy serves INCRBY tag 1, which is what redis-py's incr() sends: the
// next ID, as INCR. Another increment is refused: IDs are not counters to
// be moved by any amount; IDS gives several.
func (s *Server) incrBy(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) != 3 {
		return arity(cmdIncrBy, args)
	}
	if string(args[2]) != "1" {
		return errIncrBy
	}
	return s.incr(c, ses, args[:2])
}

// mget serves MGET tag [tag …]: the next ID of each, as GET answers it.
// Every tag is checked before any ID is taken, so a bad or unknown tag
// costs the others nothing.
func (s *Server) mget(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) < 2 {
		return arity(cmdMget, args)
	}
	tags := args[1:]
	// Every tag allowed first: a refused token learns nothing of which
	// tags exist.
	for _, t := range tags {
		if err := s.allowTag(ses, ses.tag(t)); err != nil {
			return err
		}
	}
	for _, t := range tags {
		if _, err := s.seg.Buffered(ses.tag(t)); err != nil {
			return err
		}
	}
	return s.mgetText(c, ses, tags)
}

// ids serves IDS tag count: count IDs as /alloc?count= gives them, with
// the same limit (max_batch): strictly increasing for sequential and
// fixed_length tags, unique in no order for scrambled ones, of one period
// and increasing for dated ones (as text: text.go).
func (s *Server) ids(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) != 3 {
		return arity(cmdIDs, args)
	}
	if err := s.allowTag(ses, ses.tag(args[1])); err != nil {
		return err
	}
	n, err := s.readCount(args[2])
	if err != nil {
		return err
	}
	ids := ses.scratch(n)
	tag := ses.tag(args[1])
	if err := s.seg.NextN(s.ctx, tag, ids); err != nil {
		return s.idsText(c, ses, tag, ids, err)
	}
	s.writeIDs(c, ses, ids)
	return nil
}

// snowflake serves SNOWFLAKE [count]: one ID as a bulk string, or an array.
func (s *Server) snowflake(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) > 2 {
		return arity(cmdSnowflake, args)
	}
	if err := s.allowTag(ses, ""); err != nil { // snowflake IDs name no tag
		return err
	}
	if s.flake == nil {
		return snowflake.ErrDisabled
	}
	if len(args) == 1 {
		id, err := s.flake.Next()
		if err != nil {
			return err
		}
		c.WriteBulk(strconv.AppendInt(ses.num[:0], id, 10))
		return nil
	}
	n, err := s.readCount(args[1])
	if err != nil {
		return err
	}
	ids := ses.scratch(n)
	if err := s.flake.NextN(ids); err != nil {
		return err
	}
	s.writeIDs(c, ses, ids)
	return nil
}

// writeIDs answers an array of IDs as bulk strings of digits, like GET.
func (s *Server) writeIDs(c redcon.Conn, ses *session, ids []int64) {
	c.WriteArray(len(ids))
	for _, id := range ids {
		c.WriteBulk(strconv.AppendInt(ses.num[:0], id, 10))
	}
}

// readCount reads a count of IDS or SNOWFLAKE, which the domain's limit
// (max_batch) must allow, and refuses it in the domain's words as HTTP
// does.
func (s *Server) readCount(b []byte) (int, error) {
	n, ok := parseCount(b)
	if !ok {
		return 0, s.count.Err()
	}
	return n, s.count.Check(n)
}

// parseCount reads a count in digits only, as HTTP's count parameter. A
// sign, a space, a leading zero or another base ("+5", "007", "0x10") is
// refused, not read some way: a proxy or a log reading the command must
// not see another count than idalloc does. Nine digits at most: larger
// counts are refused by any limit anyway.
func parseCount(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 || b[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
