package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/market"
)

// The service's background work, the rush and the lab runs, is run by
// packages of its own (internal/service/rush, internal/service/lab) behind the two small
// interfaces below, so that this package keeps to HTTP: it runs no
// simulation and no fault itself. The interfaces take and return the
// types of internal/service/api, the routes' JSON contract.

// Rush runs the rush of POST /api/rush in the background, one at a time.
type Rush interface {
	// Start starts a rush and returns its status; it fails with
	// api.ErrBusy while one runs and with api.ErrClosed after Close.
	Start(cfg api.RushConfig) (api.RushStatus, error)
	// Status is the last rush's status, live while it runs.
	Status() api.RushStatus
	// Cancel stops the running rush, waits for it to end and returns its
	// final status.
	Cancel(ctx context.Context) (api.RushStatus, error)
	// Close stops the running rush and waits for it.
	Close()
}

// Lab runs the lab runs of POST /api/lab/runs in the background, one at
// a time, and keeps the last ones.
type Lab interface {
	// Scenarios is what the lab can run.
	Scenarios() api.LabScenarios
	// Start starts the run req asks for and returns it; it fails with an
	// error wrapping api.ErrInvalid for a request the lab cannot run,
	// api.ErrBusy while a run is running and api.ErrClosed after Close.
	Start(req api.LabRequest) (api.LabRun, error)
	// Run is the run called id, if it is kept.
	Run(id string) (run api.LabRun, ok bool)
	// Close stops the running run and waits for it.
	Close()
}

// labBodyLimit bounds a lab request's body (a recipe, or a fault and a
// strategy, is a few dozen bytes).
const labBodyLimit = 4 << 10

// Bounds and defaults of a rush (POST /api/rush).
const (
	MaxRushBuyers      = 200
	MaxRushListers     = 50
	DefaultRushListers = 5
	MinRushDuration    = time.Second
	MaxRushDuration    = 60 * time.Second
	MaxRushRTT         = time.Second // the round trip a rush may add
)

// Close stops the server's background work (a rush, a lab run) and waits
// for it to end. Requests after Close that would start one are refused.
func (s *Server) Close() {
	if s.cfg.Rush != nil {
		s.cfg.Rush.Close()
	}
	if s.cfg.Lab != nil {
		s.cfg.Lab.Close()
	}
	if s.cfg.Explore != nil {
		s.cfg.Explore.Close()
	}
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

// jobError is the answer for a refused start of a job of the kind what.
func jobError(what string, err error) error {
	switch {
	case errors.Is(err, api.ErrBusy):
		return busy(what)
	case errors.Is(err, api.ErrClosed):
		return closed()
	case errors.Is(err, api.ErrInvalid):
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case errors.Is(err, api.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error(), Err: err}
	}
	return err
}

// unavailable is the 404 of a job route the server was made without.
func unavailable(what string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound,
		Message: fmt.Sprintf("this server runs no %s", what)}
}

func (s *Server) jobRoutes(api *echo.Group) {
	api.POST("/rush", s.startRush, s.admin)
	api.GET("/rush", s.getRush)
	api.DELETE("/rush", s.cancelRush, s.admin)
	s.bodyLimits[api.POST("/lab/runs", s.startLab, s.admin, s.labBudget.middleware).Path] = labBodyLimit
	api.GET("/lab/runs/:id", s.getLab)
	api.GET("/lab/scenarios", s.labScenarios)
	s.exploreRoutes(api)
}

func parseRush(req api.RushRequest) (api.RushConfig, error) {
	if err := missing(num("buyers", req.Buyers), num("duration_ms", req.DurationMS)); err != nil {
		return api.RushConfig{}, err
	}
	cfg := api.RushConfig{Buyers: int(*req.Buyers), Listers: DefaultRushListers}
	if *req.Buyers < 1 || *req.Buyers > MaxRushBuyers {
		return cfg, invalid("buyers must be between 1 and %d", MaxRushBuyers)
	}
	if req.Listers != nil {
		if *req.Listers < 1 || *req.Listers > MaxRushListers {
			return cfg, invalid("listers must be between 1 and %d", MaxRushListers)
		}
		cfg.Listers = int(*req.Listers)
	}
	if *req.DurationMS < MinRushDuration.Milliseconds() || *req.DurationMS > MaxRushDuration.Milliseconds() {
		return cfg, invalid("duration_ms must be between %d and %d", MinRushDuration.Milliseconds(), MaxRushDuration.Milliseconds())
	}
	cfg.Duration = time.Duration(*req.DurationMS) * time.Millisecond
	if req.RTTMS != nil {
		if *req.RTTMS < 0 || *req.RTTMS > float64(MaxRushRTT.Milliseconds()) {
			return cfg, invalid("rtt_ms must be between 0 and %d", MaxRushRTT.Milliseconds())
		}
		cfg.RTT = time.Duration(*req.RTTMS * float64(time.Millisecond))
	}
	if req.Strategies == nil {
		cfg.Strategies = slices.Clone(market.Strategies)
	} else if len(req.Strategies) == 0 {
		return cfg, invalid("strategies must name at least one of %v", market.Strategies)
	}
	for _, name := range req.Strategies {
		st, err := market.ParseStrategy(name)
		if err != nil {
			return cfg, err
		}
		if slices.Contains(cfg.Strategies, st) {
			return cfg, invalid("strategy %q is named twice", name)
		}
		cfg.Strategies = append(cfg.Strategies, st)
	}
	return cfg, nil
}

// startRush is POST /api/rush: 202 and the rush's status; it runs in the
// background, each strategy in a fresh market of its own.
func (s *Server) startRush(c echo.Context) error {
	if s.cfg.Rush == nil {
		return unavailable("rush")
	}
	var req api.RushRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	cfg, err := parseRush(req)
	if err != nil {
		return err
	}
	st, err := s.cfg.Rush.Start(cfg)
	if err != nil {
		return jobError("rush", err)
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/rush")
	return c.JSON(http.StatusAccepted, st)
}

// getRush is GET /api/rush: the last rush, live while it runs ("state":
// "idle" before the first).
func (s *Server) getRush(c echo.Context) error {
	if s.cfg.Rush == nil {
		return unavailable("rush")
	}
	return c.JSON(http.StatusOK, s.cfg.Rush.Status())
}

// cancelRush is DELETE /api/rush: stop the running rush (its operations in
// flight finish, its markets are audited and deleted) and answer its
// final status; without a running rush, the last status.
func (s *Server) cancelRush(c echo.Context) error {
	if s.cfg.Rush == nil {
		return unavailable("rush")
	}
	st, err := s.cfg.Rush.Cancel(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// labScenarios is GET /api/lab/scenarios: what the lab can run.
func (s *Server) labScenarios(c echo.Context) error {
	if s.cfg.Lab == nil {
		return unavailable("lab")
	}
	return c.JSON(http.StatusOK, s.cfg.Lab.Scenarios())
}

// startLab is POST /api/lab/runs: 202 and the run, which goes on in the
// background; GET /api/lab/runs/:id follows it.
func (s *Server) startLab(c echo.Context) error {
	if s.cfg.Lab == nil {
		return unavailable("lab")
	}
	var req api.LabRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	run, err := s.cfg.Lab.Start(req)
	if err != nil {
		return jobError("lab run", err)
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/lab/runs/"+run.ID)
	return c.JSON(http.StatusAccepted, run)
}

// getLab is GET /api/lab/runs/:id.
func (s *Server) getLab(c echo.Context) error {
	if s.cfg.Lab == nil {
		return unavailable("lab")
	}
	run, ok := s.cfg.Lab.Run(c.Param("id"))
	if !ok {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: fmt.Sprintf("no lab run %q (only the last runs are kept)", c.Param("id"))}
	}
	return c.JSON(http.StatusOK, run)
}
