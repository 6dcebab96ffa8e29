package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockmarket/lockmarket/internal/service/api"
)

// Explore keeps the lab's explorer sessions: each one a schedule of a lock
// recipe's (or a strategy's) real code that a person drives step by step,
// on a Redis of the session's own.
type Explore interface {
	// Start makes a session for req on behalf of client (the remote
	// address) and returns its ID and first state; it fails with an error
	// wrapping api.ErrInvalid for a request it cannot explore,
	// api.ErrBusy when it holds as many sessions as it may (in all or
	// for this client), and api.ErrClosed after Close.
	Start(ctx context.Context, client string, req api.ExploreRequest) (id string, state api.ExploreState, err error)
	// State is session id's state; it does not wait for a search.
	State(ctx context.Context, id string) (api.ExploreState, error)
	// Step takes an action, one of the enabled actions of the step it
	// branches from, as JSON, and returns the new state; an action that
	// is not enabled wraps api.ErrInvalid.
	Step(ctx context.Context, id string, action json.RawMessage) (api.ExploreState, error)
	// Undo takes the last step back and returns the state before it.
	Undo(ctx context.Context, id string) (api.ExploreState, error)
	// Find starts a search in the background for a continuation that
	// breaks a property and returns the state, which reports the search.
	Find(ctx context.Context, id string, req json.RawMessage) (api.ExploreState, error)
	// CancelFind stops session id's search and returns the state.
	CancelFind(ctx context.Context, id string) (api.ExploreState, error)
	// Remove ends session id.
	Remove(id string) error
	// Close ends every session.
	Close()
}

// Bounds of the explorer's requests: a session's request (a recipe, or the
// Lua of a lock to explore) and an action are small. A step replays a
// schedule, taking milliseconds of the server's CPU, or up to its budget
// of wall time for pasted Lua (whose scripts spin in a sandbox at the
// least CPU priority), so a class's worth run at once and the others
// wait their turn (at most exploreWait) rather than being refused: a
// class steps together. The searches run in the background, bounded by
// the Explore itself.
const (
	exploreBodyLimit  = 16 << 10
	exploreConcurrent = 48
	exploreWait       = 10 * time.Second
)

// exploreRoutes registers the explorer's routes. They take no admin token:
// a session runs on a server of its own (pasted Lua on a redis-server
// started for it, never in the service) and never touches the served
// Redis, so a student's browser opens one on a service a teacher serves
// to the room; the Explore bounds them in all and per client.
func (s *Server) exploreRoutes(api *echo.Group) {
	q := &queue{slots: make(chan struct{}, exploreConcurrent), maxBody: exploreBodyLimit}
	for _, r := range []*echo.Route{
		api.POST("/explore/sessions", s.startExplore, q.middleware),
		api.POST("/explore/sessions/:id/steps", s.onSession(http.StatusOK, sessionStep), q.middleware),
		api.POST("/explore/sessions/:id/undo", s.onSession(http.StatusOK, sessionUndo), q.middleware),
		api.POST("/explore/sessions/:id/find", s.onSession(http.StatusAccepted, sessionFind), q.middleware),
	} {
		s.bodyLimits[r.Path] = q.maxBody
	}
	api.GET("/explore/sessions/:id", s.onSession(http.StatusOK, sessionState))
	api.DELETE("/explore/sessions/:id", s.removeExplore)
	api.DELETE("/explore/sessions/:id/find", s.onSession(http.StatusOK, sessionCancelFind))
}

// queue bounds the explorer's requests: a larger body than maxBody is
// refused with 413, and a request waits up to exploreWait for one of the
// slots (429 busy after).
type queue struct {
	slots   chan struct{}
	maxBody int64
}

func (q *queue) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength > q.maxBody {
			return &http.MaxBytesError{Limit: q.maxBody}
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, q.maxBody)
		wait := time.NewTimer(exploreWait)
		defer wait.Stop()
		select {
		case q.slots <- struct{}{}:
		case <-wait.C:
			return &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, RetryAfter: time.Second,
				Message: fmt.Sprintf("the explorer is busy: %d requests run at once and more waited %v; try again", cap(q.slots), exploreWait)}
		case <-req.Context().Done():
			return req.Context().Err()
		}
		defer func() { <-q.slots }()
		return next(c)
	}
}

// startExplore is POST /api/explore/sessions: 201 with the session's ID
// and first state.
func (s *Server) startExplore(c echo.Context) error {
	if s.cfg.Explore == nil {
		return unavailable("explorer")
	}
	var req api.ExploreRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	client := c.Request().RemoteAddr
	if host, _, err := net.SplitHostPort(client); err == nil {
		client = host
	}
	id, st, err := s.cfg.Explore.Start(c.Request().Context(), client, req)
	if err != nil {
		return exploreError(err)
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/explore/sessions/"+id)
	return c.JSON(http.StatusCreated, api.ExploreSession{ID: id, State: plainState(st)})
}

// sessionOp is what a route does on the session of its :id, and the
// session's state after it, which is the route's answer.
type sessionOp func(c echo.Context, e Explore) (api.ExploreState, error)

// onSession is the handler of a route that answers op's state with status.
func (s *Server) onSession(status int, op sessionOp) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Explore == nil {
			return unavailable("explorer")
		}
		st, err := op(c, s.cfg.Explore)
		if err != nil {
			return exploreError(err)
		}
		return c.JSON(status, plainState(st))
	}
}

// removeExplore is DELETE /api/explore/sessions/:id: 204 once it is gone.
func (s *Server) removeExplore(c echo.Context) error {
	if s.cfg.Explore == nil {
		return unavailable("explorer")
	}
	if err := s.cfg.Explore.Remove(c.Param("id")); err != nil {
		return exploreError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// sessionState is GET /api/explore/sessions/:id: the session's state.
func sessionState(c echo.Context, e Explore) (api.ExploreState, error) {
	return e.State(c.Request().Context(), c.Param("id"))
}

// sessionStep is POST /api/explore/sessions/:id/steps with one of the
// state's enabled actions: 200 and the new state.
func sessionStep(c echo.Context, e Explore) (api.ExploreState, error) {
	var action json.RawMessage
	if err := decodeJSON(c, &action); err != nil {
		return api.ExploreState{}, err
	}
	return e.Step(c.Request().Context(), c.Param("id"), action)
}

// sessionUndo is POST /api/explore/sessions/:id/undo: 200 and the state
// before the last step.
func sessionUndo(c echo.Context, e Explore) (api.ExploreState, error) {
	return e.Undo(c.Request().Context(), c.Param("id"))
}

// sessionFind is POST /api/explore/sessions/:id/find, with {} or
// {"from_step": N}: 202 at once, with the state, whose find reports the
// search as it runs (GET the session to follow it).
func sessionFind(c echo.Context, e Explore) (api.ExploreState, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return api.ExploreState{}, err
	}
	return e.Find(c.Request().Context(), c.Param("id"), body)
}

// sessionCancelFind is DELETE /api/explore/sessions/:id/find: 200 with the
// state once the search has stopped.
func sessionCancelFind(c echo.Context, e Explore) (api.ExploreState, error) {
	return e.CancelFind(c.Request().Context(), c.Param("id"))
}

// exploreError is the answer for a refused explorer request, its message
// in plain words.
func exploreError(err error) error {
	if errors.Is(err, api.ErrBusy) {
		return &Error{Status: http.StatusConflict, Code: CodeBusy, Message: strings.TrimPrefix(err.Error(), api.ErrBusy.Error()+": "), Err: err}
	}
	err = jobError("explorer session", err)
	if ae, ok := err.(*Error); ok {
		ae.Message = plainWords(ae.Message)
	}
	return err
}

// plainState is st with the words the page shows of it plain: what is
// explored, and why a search failed.
func plainState(st api.ExploreState) api.ExploreState {
	st.About = plainWords(st.About)
	if st.Find != nil && st.Find.Error != "" {
		f := *st.Find
		f.Error = plainWords(f.Error)
		st.Find = &f
	}
	return st
}
