package lab

import (
	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/gallery"
)

// env is the Redis a lab recipe runs on, and what closes it. On a real
// server, a fresh market of the recipe's own on the service's Redis: a
// lease there runs out in real time, or by a PEXPIRE of its own key. On
// the embedded miniredis, an embedded server of the run's own: miniredis's
// keys expire only when its clock is moved, for every key at once, and
// moving the served server's clock would age the served market's keys
// (locks held, idempotency records) with the recipe's.
func (l *Runner) env() (gallery.Env, func(), error) {
	if l.mini == nil {
		return gallery.Env{Client: l.rdb}, func() {}, nil
	}
	mini, err := miniredis.Run()
	if err != nil {
		return gallery.Env{}, nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: mini.Addr()})
	return gallery.Env{Client: rdb, Mini: mini}, func() {
		rdb.Close()
		mini.Close()
	}, nil
}
