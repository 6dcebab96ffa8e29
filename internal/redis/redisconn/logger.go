package redisconn

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Logger is a go-redis logger (give it to redis.SetLogger) that writes the
// client library's own messages, such as "failed to dial after 5
// attempts", as lines of the program that uses it: "PREFIX: redis
// client: MESSAGE". With io.Discard it silences them. It is safe for
// concurrent use.
type Logger struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

// NewLogger returns a Logger writing to w, each line starting with
// prefix (the program's name).
func NewLogger(w io.Writer, prefix string) *Logger {
	return &Logger{w: w, prefix: prefix}
}

// Printf writes one message as one line. The pool's "failed to dial"
// is left out: the command that needed the connection returns the same
// error, and the program reports it there, once.
func (l *Logger) Printf(_ context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	if strings.Contains(msg, "failed to dial after") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s: redis client: %s\n", l.prefix, msg)
}
