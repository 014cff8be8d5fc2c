package resp

import (
	"strconv"
	"strings"

	"github.com/tidwall/redcon"
)

// The commands clients send while connecting, or to check a connection,
// answered so that go-redis, redis-py, ioredis and redis-cli connect
// without error. None of them touches the allocator.

// ping serves PING [msg].
func (s *Server) ping(c redcon.Conn, _ *session, args [][]byte) error {
	switch len(args) {
	case 1:
		c.WriteString("PONG")
	case 2:
		c.WriteBulk(args[1])
	default:
		return arity(cmdPing, args)
	}
	return nil
}

// echo serves ECHO msg.
func (s *Server) echo(c redcon.Conn, _ *session, args [][]byte) error {
	if len(args) != 2 {
		return arity(cmdEcho, args)
	}
	c.WriteBulk(args[1])
	return nil
}

// quit serves QUIT: OK, then the connection closes.
func (s *Server) quit(c redcon.Conn, ses *session, _ [][]byte) error {
	c.WriteString("OK")
	ses.closing = true
	_ = c.Close()
	return nil
}

// selectDB serves SELECT 0; idalloc has no other database.
func (s *Server) selectDB(c redcon.Conn, _ *session, args [][]byte) error {
	if len(args) != 2 {
		return arity(cmdSelect, args)
	}
	if string(args[1]) != "0" {
		return errSelect
	}
	c.WriteString("OK")
	return nil
}

// del serves DEL tag …: refused, with the reason.
func (s *Server) del(_ redcon.Conn, _ *session, args [][]byte) error {
	if len(args) < 2 {
		return arity(cmdDel, args)
	}
	return errDel
}

// hello serves HELLO [protover [AUTH user token] [SETNAME name]]: RESP2
// only. HELLO 3 is refused with Redis's NOPROTO, on which clients fall back
// to RESP2 (go-redis v9 sends HELLO 3 first, then AUTH if it has a
// password).
func (s *Server) hello(c redcon.Conn, ses *session, args [][]byte) error {
	i := 1
	if len(args) > 1 {
		if string(args[1]) != "2" { // not "02" or "+2", as Redis reads it
			return errNoProto
		}
		i = 2
	}
	for i < len(args) {
		switch strings.ToLower(string(args[i])) {
		case "auth":
			if i+2 >= len(args) {
				return errSyntax
			}
			if err := s.checkToken(ses, args[i+2]); err != nil {
				return err
			}
			i += 3
		case "setname":
			if i+1 >= len(args) {
				return errSyntax
			}
			ses.name = string(args[i+1])
			i += 2
		default:
			return errSyntax
		}
	}
	c.WriteArray(16)
	for _, kv := range [...][2]string{
		{"server", "redis"}, {"version", redisVersion}, {"idalloc_version", s.version},
		{"mode", "standalone"}, {"role", "master"},
	} {
		c.WriteBulkString(kv[0])
		c.WriteBulkString(kv[1])
	}
	c.WriteBulkString("proto")
	c.WriteInt(2)
	c.WriteBulkString("id")
	c.WriteInt64(ses.id)
	c.WriteBulkString("modules")
	c.WriteArray(0)
	return nil
}

// client serves the CLIENT subcommands clients send while connecting
// (SETNAME, SETINFO, NO-EVICT, NO-TOUCH: OK), and GETNAME, ID and INFO.
func (s *Server) client(c redcon.Conn, ses *session, args [][]byte) error {
	if len(args) < 2 {
		return arity(cmdClient, args)
	}
	switch strings.ToLower(string(args[1])) {
	case "setname":
		if len(args) != 3 {
			return arity(cmdClient, args)
		}
		ses.name = string(args[2])
		c.WriteString("OK")
	case "setinfo", "no-evict", "no-touch":
		c.WriteString("OK")
	case "getname":
		if ses.name == "" {
			c.WriteNull()
		} else {
			c.WriteBulkString(ses.name)
		}
	case "id":
		c.WriteInt64(ses.id)
	case "info":
		c.WriteBulkString("id=" + strconv.FormatInt(ses.id, 10) + " addr=" + ses.remote + " name=" + ses.name + " db=0\n")
	default:
		return errSubcommand
	}
	return nil
}

// command serves COMMAND …: idalloc publishes no command table, so
// COMMAND, COMMAND DOCS and COMMAND INFO answer an empty array (redis-cli
// then offers no hints) and COMMAND COUNT the number of commands.
func (s *Server) command(c redcon.Conn, _ *session, args [][]byte) error {
	if len(args) > 1 && strings.EqualFold(string(args[1]), "count") {
		c.WriteInt(int(numCommands) - 1)
		return nil
	}
	c.WriteArray(0)
	return nil
}

// config serves CONFIG GET with an empty answer, as Redis answers a
// parameter it does not have: idalloc has no Redis configuration to show,
// and tools that read it first (redis-benchmark reads "save" and
// "appendonly") go on without it. Other subcommands are refused.
func (s *Server) config(c redcon.Conn, _ *session, args [][]byte) error {
	if len(args) < 3 || !strings.EqualFold(string(args[1]), "get") {
		return errSubcommand
	}
	c.WriteArray(0)
	return nil
}
