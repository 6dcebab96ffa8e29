package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"
)

// jobs runs the server's background work, the rush and the lab runs: each
// kind one at a time, all stopped and waited for by Close.
type jobs struct {
	ctx    context.Context // ends when the server closes
	cancel context.CancelFunc
	wg     sync.WaitGroup

	rush rushSlot
	lab  labSlot
}

func newJobs() *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{ctx: ctx, cancel: cancel}
}

// Close stops the server's background work (a rush, a lab run) and waits
// for it to end. Requests after Close that would start one are refused.
func (s *Server) Close() {
	s.jobs.cancel()
	s.jobs.wg.Wait()
}

// busy is the 409 answered when a job of the kind is already running.
func busy(what string) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeBusy,
		Message: fmt.Sprintf("a %s is already running; wait for it to end or cancel it", what)}
}

// closed is the answer when the server is shutting down.
func closed() *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeTimeout, Message: "the server is shutting down"}
}

func (s *Server) jobRoutes(api *echo.Group) {
	api.POST("/rush", s.startRush, s.admin)
	api.GET("/rush", s.getRush)
	api.DELETE("/rush", s.cancelRush, s.admin)
	api.POST("/lab/runs", s.startLab, s.admin, s.labBudget.middleware)
	api.GET("/lab/runs/:id", s.getLab)
	api.GET("/lab/scenarios", s.labScenarios)
}
