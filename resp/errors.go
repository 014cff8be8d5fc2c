package resp

import (
	"errors"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment/dated"
)

// RESP error classes: the first word of an error reply, which clients read
// to decide what to do (docs/api.md §6).
const (
	classErr      = "ERR"      // bad input, unknown tag or command, exists, exhausted (a period too)
	classNoAuth   = "NOAUTH"   // admin rights missing
	classTryAgain = "TRYAGAIN" // retry, on another instance if there is one
	// Redis's own class for HELLO 3, on which clients fall back to RESP2.
	classNoProto = "NOPROTO"
)

// kindClass is the one place that picks the RESP error class of each kind
// of the vocabulary (package errs); the message is the error's own, the
// one HTTP sends as msg. A kind missing here is answered as an internal
// error; TestKindClass holds it to errs.Kinds.
var kindClass = map[errs.Kind]string{
	errs.BadRequest:   classErr,
	errs.UnknownTag:   classErr,
	errs.UnknownRoute: classErr,
	errs.Exists:       classErr,
	errs.Exhausted:    classErr,
	// HTTP's resp_code 10 (docs/api.md §11), which §6 answers ERR: a spent
	// period is not cured by retrying at once, as go-redis does on
	// TRYAGAIN, but by the next period; the words say when it begins.
	errs.PeriodExhausted:  classErr,
	errs.MethodNotAllowed: classErr,
	errs.TokenMismatch:    classErr,
	errs.LeaseExpired:     classErr,
	errs.NotAssigned:      classErr,
	errs.Unavailable:      classTryAgain,
	errs.Draining:         classTryAgain,
	errs.ClockBackwards:   classTryAgain,
	// HTTP's resp_code 5 (no worker ID free, or snowflake mode off): §6
	// keeps TRYAGAIN for resp_codes 3 and 4, and clients such as go-redis
	// retry a TRYAGAIN at once, which neither cures.
	errs.NoWorkerID:   classErr,
	errs.Unauthorized: classNoAuth,
	errs.Forbidden:    classNoAuth,
}

// replyError is an answer this front end gives in its own words: a
// request it cannot read, or one its rules refuse before the domain sees
// it. line is the whole error reply, class first.
type replyError struct {
	line    string
	outcome outcome
	// close: end the connection after the reply (a request that is not
	// meant for this port).
	close bool
}

func (e *replyError) Error() string { return e.line }

func ownError(class, msg string) *replyError {
	out := outErr
	switch class {
	case classNoAuth:
		out = outNoAuth
	case classTryAgain:
		out = outTryAgain
	}
	return &replyError{line: class + " " + msg, outcome: out}
}

// The front end's own refusals. Where HTTP refuses the same thing, the
// words are HTTP's msg.
var (
	errNoAuth       = ownError(classNoAuth, "missing admin token: send AUTH <admin_token> first")
	errLoopbackOnly = ownError(classNoAuth, "admin calls are served to loopback clients only: configure admin_token")
	// errWrongToken is AUTH with a token that is not admin_token, in the
	// words Redis answers a wrong requirepass with, which clients turn into
	// their authentication error (redis-py's AuthenticationError).
	errWrongToken = &replyError{line: classErr + " invalid password", outcome: outNoAuth}
	errNoToken    = ownError(classErr, "AUTH: no admin_token is configured on this instance; admin commands are served to loopback clients only")
	errDel        = ownError(classErr, "DEL refused: tags are never deleted, since a tag deleted and created again would repeat its IDs")
	errUnknownCmd = ownError(classErr, "unknown command: idalloc serves GET, INCR, INCRBY 1, MGET, IDS, SNOWFLAKE, HSET, HGETALL, KEYS, INFO, DEL, AUTH, PING, ECHO, HELLO, CLIENT, COMMAND, CONFIG, SELECT, QUIT")
	errSelect     = ownError(classErr, "DB index is out of range: idalloc has database 0 only")
	errNoProto    = ownError(classNoProto, "sorry, this protocol version is not supported: idalloc speaks RESP2 (HELLO 2)")
	errSubcommand = ownError(classErr, "unknown subcommand")
	errIncrBy     = ownError(classErr, "INCRBY takes an increment of 1 only: IDS <tag> <count> gives several IDs")
	errSyntax     = ownError(classErr, "syntax error")
	errInternal   = ownError(classErr, "internal error")
	// errHTTP answers an HTTP request sent to this port, as a web page can
	// make a browser do (a cross-protocol form post whose body holds
	// commands). Redis closes such connections too.
	errHTTP = &replyError{line: classErr + " this port speaks the Redis protocol, not HTTP: closing", outcome: outErr, close: true}
)

// wrongArgs is Redis's words for a command given the wrong number of
// arguments; name is one of ours, never the client's bytes.
func wrongArgs(name string) *replyError {
	return ownError(classErr, "wrong number of arguments for '"+name+"' command")
}

// classify finds err's answer: the front end's own error as it is, a
// domain error by its Kind with its message; anything else is internal
// (internal true), its text only for the log.
func classify(err error) (line string, out outcome, internal bool) {
	if re, ok := errors.AsType[*replyError](err); ok {
		return re.line, re.outcome, false
	}
	if e, ok := errs.Describe(err); ok {
		msg := e.Error()
		if pe, ok := errors.AsType[*dated.ExhaustedError](err); ok {
			// HTTP's msg and then when the next period begins, which
			// HTTP says in Retry-After and RESP has no other place for.
			msg = pe.Error()
		}
		switch class := kindClass[e.Kind]; class {
		case classTryAgain:
			return class + " " + msg, outTryAgain, false
		case classNoAuth:
			return class + " " + msg, outNoAuth, false
		case classErr:
			return class + " " + msg, outErr, false
		}
	}
	return errInternal.line, outInternal, true
}
