package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/lockmarket/lockmarket/internal/jobs"
)

// Explore keeps the lab's explorer sessions: each one a schedule of a lock
// recipe's (or a strategy's) real code that a person drives step by step,
// on a Redis of the session's own. Its answers are JSON values.
type Explore interface {
	// Start makes a session for req and returns its ID and first state;
	// it fails with an error wrapping jobs.ErrInvalid for a request it
	// cannot explore, jobs.ErrBusy when it holds as many sessions as it
	// may, and jobs.ErrClosed after Close.
	Start(ctx context.Context, req jobs.ExploreRequest) (id string, state any, err error)
	// State is session id's state.
	State(ctx context.Context, id string) (state any, err error)
	// Step takes action, one of the state's enabled actions as JSON, and
	// returns the new state; an action that is not enabled wraps
	// jobs.ErrInvalid.
	Step(ctx context.Context, id string, action json.RawMessage) (state any, err error)
	// Undo takes the last step back and returns the state before it.
	Undo(ctx context.Context, id string) (state any, err error)
	// Find searches the continuations of the current state for one that
	// breaks a property and returns it, as actions to take.
	Find(ctx context.Context, id string) (found any, err error)
	// Remove ends session id.
	Remove(id string) error
	// Close ends every session.
	Close()
}

// Bounds of the explorer's requests: a session's request (a recipe, or the
// Lua of a lock to explore) and an action are small, and a find searches
// on the server's CPU, so few run at once.
const (
	exploreBodyLimit  = 16 << 10
	exploreConcurrent = 4
)

// exploreRoutes registers the explorer's routes. Those that make a session
// or move it take the admin token (they run code and searches on the
// server) and the explorer's budget; reading a session's state does not.
func (s *Server) exploreRoutes(api *echo.Group) {
	b := newBudget("explorer", exploreBodyLimit, exploreConcurrent)
	api.POST("/explore/sessions", s.startExplore, s.admin, b.middleware)
	api.GET("/explore/sessions/:id", s.exploreState)
	api.DELETE("/explore/sessions/:id", s.removeExplore, s.admin)
	api.POST("/explore/sessions/:id/steps", s.exploreStep, s.admin, b.middleware)
	api.POST("/explore/sessions/:id/undo", s.exploreUndo, s.admin, b.middleware)
	api.POST("/explore/sessions/:id/find", s.exploreFind, s.admin, b.middleware)
}

// exploreAnswer is the JSON of a session's state with its ID.
type exploreAnswer struct {
	ID    string `json:"id"`
	State any    `json:"state"`
}

// startExplore is POST /api/explore/sessions: 201 with the session's ID
// and first state.
func (s *Server) startExplore(c echo.Context) error {
	if s.cfg.Explore == nil {
		return unavailable("explorer")
	}
	var req jobs.ExploreRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	id, st, err := s.cfg.Explore.Start(c.Request().Context(), req)
	if err != nil {
		return exploreError(err)
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/explore/sessions/"+id)
	return c.JSON(http.StatusCreated, exploreAnswer{ID: id, State: st})
}

// exploreState is GET /api/explore/sessions/:id: the session's state.
func (s *Server) exploreState(c echo.Context) error {
	if s.cfg.Explore == nil {
		return unavailable("explorer")
	}
	st, err := s.cfg.Explore.State(c.Request().Context(), c.Param("id"))
	if err != nil {
		return exploreError(err)
	}
	return c.JSON(http.StatusOK, st)
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

// exploreStep is POST /api/explore/sessions/:id/steps with one of the
// state's enabled actions: 200 and the new state.
func (s *Server) exploreStep(c echo.Context) error {
	if s.cfg.Explore == nil {
		return unavailable("explorer")
	}
	var action json.RawMessage
	if err := decodeJSON(c, &action); err != nil {
		return err
	}
	st, err := s.cfg.Explore.Step(c.Request().Context(), c.Param("id"), action)
	if err != nil {
		return exploreError(err)
	}
	return c.JSON(http.StatusOK, st)
}

// exploreUndo is POST /api/explore/sessions/:id/undo: 200 and the state
// before the last step.
func (s *Server) exploreUndo(c echo.Context) error {
	if s.cfg.Explore == nil {
		return unavailable("explorer")
	}
	st, err := s.cfg.Explore.Undo(c.Request().Context(), c.Param("id"))
	if err != nil {
		return exploreError(err)
	}
	return c.JSON(http.StatusOK, st)
}

// exploreFind is POST /api/explore/sessions/:id/find: 200 and the
// counterexample's continuation from the current state, as actions.
func (s *Server) exploreFind(c echo.Context) error {
	if s.cfg.Explore == nil {
		return unavailable("explorer")
	}
	found, err := s.cfg.Explore.Find(c.Request().Context(), c.Param("id"))
	if err != nil {
		return exploreError(err)
	}
	return c.JSON(http.StatusOK, found)
}

// exploreError is the answer for a refused explorer request.
func exploreError(err error) error {
	if errors.Is(err, jobs.ErrBusy) {
		return &Error{Status: http.StatusConflict, Code: CodeBusy,
			Message: "the explorer holds as many sessions as it may; close one or wait for one to expire", Err: err}
	}
	return jobError("explorer session", err)
}
