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

// Printf writes one message as one line.
func (l *Logger) Printf(_ context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s: redis client: %s\n", l.prefix, msg)
}
