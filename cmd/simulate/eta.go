package main

import (
	"fmt"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/output"
)

// eta says how long the rest of a job should take, at the mean pace of
// the part done: "about 1m20s left", or "" before anything is done.
func eta(elapsed time.Duration, done, total int) string {
	if done <= 0 || total <= done {
		return ""
	}
	left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	return "about " + roundDuration(left).String() + " left"
}

// roundDuration rounds d for people: to the second from a minute up, to
// a tenth of a second below.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// prefillEvery is the least time between two plain prefill lines.
const prefillEvery = 5 * time.Second

// prefill reports the prefill of the running cell: on a terminal, a live
// line; otherwise a line at most every prefillEvery, and one at the end.
// It is called from the cell's own goroutine.
func (p *progress) prefill(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	elapsed := now.Sub(p.began)
	line := fmt.Sprintf("%s prefill %s of %s listings (%d%%), %v", p.label,
		output.Thousands(int64(done)), output.Thousands(int64(total)), 100*done/max(total, 1), roundDuration(elapsed))
	if left := eta(elapsed, done, total); left != "" {
		line += ", " + left
	}
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K"+line)
		return
	}
	if done < total && now.Sub(p.prefillLast) < prefillEvery {
		return
	}
	p.prefillLast = now
	p.noteLocked(line)
}
